// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

namespace kvscope::model::ops {

/// A prompt's attention a tile of keys at a time with a running softmax (flash attention's order), on CPU
/// threads: each KV head's query rows (its grouped query heads, a block of tokens) against its keys and values,
/// so the scores [T, KV] never exist whole, and keys a row's mask hides are never scored (eager attention gives
/// them weight exactly 0). Eager attention over a long prompt spent most of a prefill writing, masking and
/// reading those scores.
class PrefillAttention {
public:
    /// Whether the tiles take these operands: CPU float32 `query` [B, Hq, T, D] and `keys`/`values` [B, Hkv, KV, D]
    /// (unit stride in D, D a multiple of 8, Hq a multiple of Hkv), a boolean `mask` [B|1, 1, T, KV] or none, no
    /// gradients, and an AVX2 processor (KVSCOPE_GGUF_KERNELS=portable keeps LibTorch's products).
    static bool applies(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                        const at::Tensor& mask);
    /// softmax(query . keys^T * scale where `mask` allows, per row) . values, as [B, T, Hq * D]; an undefined
    /// tensor when a row sees no key at all (eager attention spreads such a row evenly over every key: the
    /// caller's products do that).
    static at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& mask, double scale);
};

} // namespace kvscope::model::ops
