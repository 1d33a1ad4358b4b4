// SPDX-License-Identifier: GPL-3.0-or-later
// CUR (kvpress's CURPress): approximate leverage from squared key and value norms.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(cur) {
    kvscope::config::PressDescription press;
    press.name = "cur";
    press.referenceName = "CURPress";
    press.displayName = "CUR";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "approximate leverage from squared key/value norms; the first num_sinks kept";
    press.options = {
        {"num_sinks", "int", "4", "first tokens always kept"},
        {"leverage_type", "text", "kv_product", "key, value, kv_avg or kv_product"},
        {"use_random_leverage", "bool", "false", "project keys and values on 20 random directions first"},
        {"use_local_approximation", "bool", "true", "normalise within windows of local_window_size tokens"},
        {"local_window_size", "int", "16", "tokens per local window"},
        {"seed", "int", "0", "seed of the random projection (kvpress draws it from torch's global RNG)"}};
    press.sentence =
        "the first {num_sinks} stay; the {dropped} with the lowest {leverage_type} leverage (squared norms) were dropped";
    press.policy.values = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kvscope::press {
namespace {

/// CUR: approximate leverage of each token from the squared norms of its key and/or value (optionally after
/// a random projection to 20 dimensions, optionally normalised within local windows); the first
/// `sinkCount` tokens are kept.
class CurPress : public Press {
public:
    /// `leverageType`: key, value, kv_avg or kv_product.
    CurPress(int64_t sinkCount = 4, std::string leverageType = "kv_product", bool randomLeverage = false,
             bool localApproximation = true, int64_t localWindowSize = 16, uint64_t seed = 0);
    std::string name() const override { return "cur"; }
    std::string referenceName() const override { return "CURPress"; }
    PressReads reads() const override { return {true, false, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The leverage types, in kvpress's words.
    static const char* leverageTypes() { return "key, value, kv_avg, kv_product"; }

private:
    /// Squared norms [B, Hkv, T], divided by their local window's sum when asked.
    at::Tensor squaredNorms(const at::Tensor& states) const;

    int64_t m_sinkCount;
    std::string m_leverageType;
    bool m_randomLeverage;
    bool m_localApproximation;
    int64_t m_localWindowSize;
    uint64_t m_seed;
};

/// kvpress's fixed projection width for use_random_leverage.
constexpr int64_t projectionWidth = 20;


CurPress::CurPress(int64_t sinkCount, std::string leverageType, bool randomLeverage, bool localApproximation,
                   int64_t localWindowSize, uint64_t seed)
    : m_sinkCount(sinkCount), m_leverageType(std::move(leverageType)), m_randomLeverage(randomLeverage),
      m_localApproximation(localApproximation), m_localWindowSize(localWindowSize), m_seed(seed) {
    if (m_leverageType != "key" && m_leverageType != "value" && m_leverageType != "kv_avg" &&
        m_leverageType != "kv_product") {
        throw std::invalid_argument("CUR's leverage_type " + m_leverageType + " is not one of " +
                                    leverageTypes());
    }
    if (localWindowSize < 1) {
        throw std::invalid_argument("CUR's local_window_size must be at least 1, got " +
                                    std::to_string(localWindowSize));
    }
}

at::Tensor CurPress::squaredNorms(const at::Tensor& states) const {
    at::Tensor norms = (states * states).sum(-1);
    if (!m_localApproximation) {
        return norms;
    }
    const int64_t length = norms.size(2);
    const int64_t window = m_localWindowSize;
    const int64_t padding = (window - length % window) % window;
    const at::Tensor windows =
        at::constant_pad_nd(norms, {0, padding}, 0.0).reshape({norms.size(0), norms.size(1), -1, window});
    return (windows / windows.sum(-1, /*keepdim=*/true))
        .reshape({norms.size(0), norms.size(1), -1})
        .narrow(2, 0, length);
}

at::Tensor CurPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.values, "values", name());
    at::Tensor keys = inputs.keys;
    at::Tensor values = inputs.values;
    if (m_randomLeverage) {
        at::Tensor projection = inputs.randomMatrix;
        if (!projection.defined()) {
            at::Generator generator =
                at::detail::createCPUGenerator(m_seed + static_cast<uint64_t>(inputs.layerIndex));
            projection = at::randn({keys.size(-1), projectionWidth}, generator,
                                   at::TensorOptions().dtype(at::kFloat)) /
                         std::sqrt(static_cast<double>(projectionWidth));
        }
        projection = projection.to(keys.device(), keys.scalar_type());
        keys = at::matmul(keys, projection);
        values = at::matmul(values, projection);
    }
    const at::Tensor k2 = squaredNorms(keys);
    const at::Tensor v2 = squaredNorms(values);
    at::Tensor scores;
    if (m_leverageType == "key") {
        scores = k2;
    } else if (m_leverageType == "value") {
        scores = v2;
    } else if (m_leverageType == "kv_avg") {
        scores = (k2 + v2) / 2;
    } else {
        scores = k2 * v2;
    }
    scores = scores / scores.sum(-1, /*keepdim=*/true);
    scores.narrow(2, 0, std::min(m_sinkCount, scores.size(2))).fill_(1.0);
    return scores;
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(cur) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::CurPress>(
            options.integer("num_sinks", 0), options.text("leverage_type"), options.flag("use_random_leverage"),
            options.flag("use_local_approximation"), options.integer("local_window_size", 1),
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
