// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/CurPress.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// kvpress's fixed projection width for use_random_leverage.
constexpr int64_t projectionWidth = 20;

} // namespace

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

} // namespace kvscope::press
