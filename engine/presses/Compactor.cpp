// SPDX-License-Identifier: GPL-3.0-or-later
// Compactor (kvpress's CompactorPress): leverage blended with non-causal attention.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(compactor) {
    kvscope::config::PressDescription press;
    press.name = "compactor";
    press.referenceName = "CompactorPress";
    press.displayName = "Compactor";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "blend of leverage and non-causal attention scores; sinks at both ends kept";
    press.options = {{"sink_size_start", "int", "8", "first tokens always kept"},
                     {"sink_size_end", "int", "4", "last tokens always kept"},
                     {"chunk_size", "int", "256", "tokens per chunk of non-causal attention"},
                     {"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
                     {"blending", "text", "ratio", "weight of the leverage scores (default: the compression ratio)"},
                     {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}};
    press.sentence = "the first {sink_size_start} and last {sink_size_end} stay; the {dropped} with the lowest "
                     "blend of key leverage and non-causal attention were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    press.policy.keyProjection = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/LeverageScorePress.h"
#include "kvscope/press/NonCausalAttentionPress.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// Compactor: blends LeverageScore and NonCausalAttn, each z-normalised over the tokens between
/// `sinkStart` leading and `sinkEnd` trailing tokens, which are kept. Prefill only.
class CompactorPress : public Press {
public:
    /// `blending`: the leverage weight; unset, kvpress uses the compression ratio.
    CompactorPress(int64_t sinkStart = 8, int64_t sinkEnd = 4, int64_t chunkSize = 256,
                   int64_t sketchDimension = 48, std::optional<double> blending = std::nullopt,
                   uint64_t seed = 0);
    std::string name() const override { return "compactor"; }
    std::string referenceName() const override { return "CompactorPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The scores at compression ratio `ratio`, the blending weight when none was given.
    at::Tensor scoreAt(const PressInputs& inputs, int64_t keptCount, double ratio) const override;
    /// The leverage weight used at `ratio`.
    double blendingAt(double ratio) const { return m_blending.value_or(ratio); }

private:
    int64_t m_sinkStart;
    int64_t m_sinkEnd;
    int64_t m_chunkSize;
    int64_t m_sketchDimension;
    std::optional<double> m_blending;
    uint64_t m_seed;
};

CompactorPress::CompactorPress(int64_t sinkStart, int64_t sinkEnd, int64_t chunkSize, int64_t sketchDimension,
                               std::optional<double> blending, uint64_t seed)
    : m_sinkStart(sinkStart), m_sinkEnd(sinkEnd), m_chunkSize(chunkSize), m_sketchDimension(sketchDimension),
      m_blending(blending), m_seed(seed) {
    if (chunkSize < 1 || sketchDimension < 1) {
        throw std::invalid_argument("Compactor's chunk_size and sketch_dimension must be at least 1");
    }
}

at::Tensor CompactorPress::score(const PressInputs& inputs, int64_t keptCount) const {
    // Without a ratio kvpress's own fallback weight applies.
    return m_blending ? scoreAt(inputs, keptCount, *m_blending) : scoreAt(inputs, keptCount, 0.35);
}

at::Tensor CompactorPress::scoreAt(const PressInputs& inputs, int64_t, double ratio) const {
    require(inputs.hiddenStates, "hidden states", name());
    require(inputs.queryWeight, "query projection", name());
    require(inputs.cos, "rotary rows", name());
    require(inputs.values, "values", name());
    requirePrefillRows(inputs);
    const int64_t length = inputs.keys.size(2);
    const int64_t left = std::min(m_sinkStart, length);
    const int64_t right = std::min(m_sinkEnd, std::max<int64_t>(0, length - left));
    const int64_t rows = length - left - right;
    if (rows < 2) {
        refuseLongerThanPrompt("sink_size_start + sink_size_end", m_sinkStart + m_sinkEnd, length);
    }
    const at::Tensor leverage = LeverageScorePress::sliceScores(inputs, left, rows, m_sketchDimension, m_seed)
                                    .to(inputs.keys.scalar_type());
    const at::Tensor attention = NonCausalAttentionPress::sliceScores(inputs, left, rows, m_chunkSize);
    const at::Tensor scores = blendingAt(ratio) * leverage + attention;
    // The sinks tie with the best real token: kvpress pads with the max, not max + 1.
    return at::constant_pad_nd(scores, {left, right}, scores.max().item<double>());
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(compactor) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        const std::string blending = options.text("blending");
        // kvpress's None (the fixtures' null): the compression ratio weighs the leverage.
        const std::optional<double> weight =
            blending == "ratio" || blending == "null"
                ? std::nullopt
                : std::optional<double>(options.real("blending", 0.0, std::numeric_limits<double>::max()));
        return std::make_shared<kvscope::press::CompactorPress>(
            options.integer("sink_size_start", 0), options.integer("sink_size_end", 0),
            options.integer("chunk_size", 1), options.integer("sketch_dimension", 1), weight,
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
