// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/MaskSizes.h"
#include "kvscope/model/Architecture.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::model {

/// Attention masks as Transformers' masking_utils builds them (sdpa_mask, non-vmap path) from a
/// cache's mask sizes: absolute query positions arange(q) + queryOffset, absolute key positions
/// arange(kvLength) + kvOffset, then causal `kv <= q`, sliding `kv > q - W`, chunked
/// `(kv - lp) // C == (q - lp) // C` (lp = left padding), and the 2-D padding mask read at absolute
/// key positions after zero right-padding.
class MaskBuilder {
public:
    /// Boolean mask [batch, 1, queryLength, kvLength], true = attend. `window` is the sliding window or
    /// chunk size (ignored for full attention). `paddingMask` is [batch, positions] (nonzero = real
    /// token) or undefined; its batch size sets the mask's, else the batch is 1.
    static at::Tensor build(AttentionKind kind, int64_t window, int64_t queryLength, int64_t queryOffset,
                            const cache::MaskSizes& sizes, const at::Tensor& paddingMask, const at::Device& device);
    /// A mask as rows of '1' (attend) and '.', one row per query, rows separated by spaces (tests, logs).
    static std::string render(const at::Tensor& mask, int64_t batch = 0);
};

} // namespace kvscope::model
