// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// NonCausalAttn: every prompt query attends, without a causal mask, to the keys of its own chunk of
/// `chunkSize` tokens; a token's score is the attention it receives times its value norm, pooled over
/// three neighbours and z-normalised over the whole layer. Prefill only.
class NonCausalAttentionPress : public Press {
public:
    explicit NonCausalAttentionPress(int64_t chunkSize = 256);
    std::string name() const override { return "non_causal_attention"; }
    std::string referenceName() const override { return "NonCausalAttnPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The z-normalised scores of hidden rows [first, first + rows) against the same slice of the cache,
    /// rotated with the rotary rows of that slice (CompactorPress scores a slice without its sinks).
    static at::Tensor sliceScores(const PressInputs& inputs, int64_t first, int64_t rows, int64_t chunkSize);
    /// Attention [B, H, S] each key receives from the queries of its chunk, kvpress's
    /// non_causal_chunked_attn.
    static at::Tensor chunkedAttention(const at::Tensor& queries, const at::Tensor& keys, int64_t chunkSize);

private:
    int64_t m_chunkSize;
};

} // namespace kvscope::press
