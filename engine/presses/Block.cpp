// SPDX-License-Identifier: GPL-3.0-or-later
// Block (kvpress's BlockPress, from KeyDiff): the prompt compressed block by block, as a chunked prefill
// would, each block's tokens competing with those kept so far.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(block) {
    kvscope::config::PressDescription press;
    press.name = "block";
    press.referenceName = "BlockPress";
    press.displayName = "Block";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "block-wise compression: each block_size block competes with the tokens kept so far";
    press.options = {
        kvscope::config::PressOption::base(),
        {"block_size", "int", "128", "tokens added per round before the base press prunes again"}};
    press.sentence =
        "in rounds of {block_size} new tokens against those kept so far, by {base_name}'s scores: "
        "{base}";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: the first n_kept = int(T (1 - ratio)) tokens are kept; every following block
/// of min(block_size, T) tokens joins them and the base press keeps the best n_kept of the candidates.
/// A token's logged score is the one it had in the last round it took part in.
class BlockPress : public CachePress {
public:
    BlockPress(std::shared_ptr<const Press> base, int64_t blockSize)
        : m_base(std::move(base)), m_blockSize(blockSize) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t batch = inputs.keys.size(0);
        const int64_t heads = inputs.keys.size(1);
        const int64_t length = inputs.keys.size(2);
        const int64_t block = m_blockSize < length ? m_blockSize : length;
        const int64_t count = static_cast<int64_t>(static_cast<double>(length) * (1.0 - pass.ratio));
        const auto longs = inputs.keys.options().dtype(at::kLong);
        at::Tensor kept = at::arange(count, longs).expand({batch, heads, count});
        at::Tensor last = at::zeros({batch, heads, length}, inputs.keys.options());
        for (int64_t start = count; start < length; start += block) {
            const int64_t end = std::min(start + block, length);
            const at::Tensor candidates =
                at::cat({kept, at::arange(start, end, longs).expand({batch, heads, end - start})}, -1);
            PressInputs round = inputs;
            round.keys = TopKSelection::gather(inputs.keys, candidates);
            round.values = TopKSelection::gather(inputs.values, candidates);
            round.hiddenStates =
                at::Tensor(); // kvpress regroups them per KV head; the bases allowed ignore them
            const at::Tensor scores = m_base->score(round, count);
            last.scatter_(-1, candidates, scores.to(last.scalar_type()));
            kept = candidates.gather(-1, TopKSelection::largest(scores, count));
        }
        action.kept = kept;
        action.scores = last;
        action.details["block_size_used"] = at::scalar_tensor(block, at::kLong);
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    int64_t m_blockSize;
};

} // namespace

KVSCOPE_PRESS_FACTORY(block) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] =
            PressCatalog::wrapped(settings.name, settings.options,
                                  "which kvpress's BlockPress does not hand it per block; choose a base that "
                                  "scores keys (knorm, keydiff, ...)",
                                  PressCatalog::Withheld::QueriesOrAttentionWeights);
        return std::make_unique<BlockPress>(base, options.integer("block_size", 1));
    };
    return factory;
}
#endif
