// SPDX-License-Identifier: GPL-3.0-or-later
// ChunkKV (kvpress's ChunkKVPress): keeps whole chunks, ranked by a base scorer's summed scores.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(chunkkv) {
    kvscope::config::PressDescription press;
    press.name = "chunkkv";
    press.referenceName = "ChunkKVPress";
    press.displayName = "ChunkKV";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "keeps whole chunks of chunk_length tokens, ranked by a base scorer's mean chunk score";
    press.options = {kvscope::config::PressOption::base(),
                     {"chunk_length", "int", "20", "tokens per chunk; whole chunks are kept or dropped"}};
    press.sentence =
        "whole chunks of {chunk_length} tokens were ranked by {base_name}'s scores summed over the "
        "heads (the first batch row decides for every row and head); the {dropped} in the chunks "
        "ranked lowest were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: chunk scores (the base's scores summed over KV heads, averaged over the
/// chunk's tokens; a partial last chunk over its own), the top max(1, int(chunks * (1 - ratio))) chunks of
/// batch row 0, their tokens in position order for every row and head.
class ChunkKvPress : public CachePress {
public:
    ChunkKvPress(std::shared_ptr<const Press> base, int64_t chunkLength)
        : m_base(std::move(base)), m_chunkLength(chunkLength) {}
    bool wantsAttentionWeights(int64_t, int64_t passIndex) const override {
        return passIndex == 0 && m_base->reads().attentions;
    }
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t batch = inputs.keys.size(0);
        const int64_t heads = inputs.keys.size(1);
        const int64_t length = inputs.keys.size(2);
        const int64_t full = length / m_chunkLength;
        const int64_t rest = length % m_chunkLength;
        if (full == 0) {
            // kvpress falls back to the base press's own compression.
            const PressSelection selection = m_base->select(inputs, pass.ratio);
            action.kept = selection.keptIndices;
            action.scores = selection.scores;
            return action;
        }
        action.scores = m_base->score(inputs, m_base->keptCount(length, pass.ratio, inputs));
        std::vector<at::Tensor> chunks{action.scores.narrow(-1, 0, full * m_chunkLength)
                                           .sum(1)
                                           .view({batch, full, m_chunkLength})
                                           .mean(-1)};
        if (rest > 0) {
            chunks.push_back(action.scores.narrow(-1, length - rest, rest).sum(1).mean(-1, /*keepdim=*/true));
        }
        const at::Tensor chunkScores = at::cat(chunks, -1);
        const int64_t count = std::max<int64_t>(
            1, static_cast<int64_t>(static_cast<double>(full + (rest > 0 ? 1 : 0)) * (1.0 - pass.ratio)));
        const at::Tensor top = std::get<0>(at::sort(TopKSelection::largest(chunkScores, count)[0], -1)).cpu();
        std::vector<at::Tensor> tokens;
        const auto longs = inputs.keys.options().dtype(at::kLong);
        for (int64_t index = 0; index < count; ++index) {
            const int64_t chunk = top[index].item<int64_t>();
            tokens.push_back(chunk < full
                                 ? at::arange(chunk * m_chunkLength, (chunk + 1) * m_chunkLength, longs)
                                 : at::arange(full * m_chunkLength, length, longs));
        }
        action.kept = at::cat(tokens).expand({batch, heads, -1}).contiguous();
        action.details["chunk_scores"] = chunkScores;
        action.details["n_chunks_kept"] = at::scalar_tensor(count, at::kLong);
        action.details["kept_chunks"] = top;
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    int64_t m_chunkLength;
};

} // namespace

KVSCOPE_PRESS_FACTORY(chunkkv) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] =
            PressCatalog::wrapped(settings.name, settings.options,
                                  "which kvpress's ChunkKV does not support; choose a base that does not "
                                  "read them (knorm, snapkv, keydiff, ...)");
        return std::make_unique<ChunkKvPress>(base, options.integer("chunk_length", 1));
    };
    return factory;
}
#endif
