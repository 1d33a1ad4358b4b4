// SPDX-License-Identifier: GPL-3.0-or-later
// Chunk (kvpress's ChunkPress, FINCH): a base scorer applied to each chunk of the prompt on its own.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(chunk) {
    kvscope::config::PressDescription press;
    press.name = "chunk";
    press.referenceName = "ChunkPress";
    press.displayName = "Chunk";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "a base scorer on each chunk_length chunk alone: every chunk keeps its own share";
    press.options = {kvscope::config::PressOption::base(),
                     {"chunk_length", "int", "1024", "tokens per chunk, each scored and compressed alone"}};
    press.sentence =
        "each chunk of {chunk_length} tokens keeps its own share by {base_name}'s scores: {base}";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: chunk [i, i + C) is scored alone (keys, values and hidden rows sliced) and
/// keeps max(1, int(len * (1 - ratio))) of its tokens.
class ChunkPress : public CachePress {
public:
    ChunkPress(std::shared_ptr<const Press> base, int64_t chunkLength)
        : m_base(std::move(base)), m_chunkLength(chunkLength) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t length = inputs.keys.size(2);
        std::vector<at::Tensor> scores;
        std::vector<at::Tensor> kept;
        for (int64_t start = 0; start < length; start += m_chunkLength) {
            const int64_t size = std::min(m_chunkLength, length - start);
            PressInputs chunk = inputs;
            chunk.keys = inputs.keys.narrow(2, start, size);
            chunk.values = inputs.values.narrow(2, start, size);
            if (inputs.hiddenStates.defined() && inputs.hiddenStates.size(1) == length) {
                chunk.hiddenStates = inputs.hiddenStates.narrow(1, start, size);
            }
            const int64_t count =
                std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(size) * (1.0 - pass.ratio)));
            scores.push_back(m_base->score(chunk, count));
            kept.push_back(TopKSelection::largest(scores.back(), count) + start);
        }
        action.scores = at::cat(scores, -1);
        action.kept = at::cat(kept, -1);
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    int64_t m_chunkLength;
};

} // namespace

KVSCOPE_PRESS_FACTORY(chunk) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        // kvpress slices keys and hidden rows per chunk; a window of queries or attention weights over the
        // whole prompt does not slice.
        const auto [options, base] = PressCatalog::wrapped(settings.name, settings.options,
                                                           "which a chunk does not slice; choose a base that "
                                                           "scores keys (knorm, keydiff, streaming_llm, ...)",
                                                           PressCatalog::Withheld::QueriesOrAttentionWeights);
        return std::make_unique<ChunkPress>(base, options.integer("chunk_length", 1));
    };
    return factory;
}
#endif
