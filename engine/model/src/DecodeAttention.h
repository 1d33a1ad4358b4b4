// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

namespace kvscope::model::ops {

/// A decode step's attention over the cache on CPU threads, fused (attend()) where no one reads the weights, else
/// its two products: each KV head's few query rows (its grouped query heads for one or a few new tokens) against
/// its keys and values, every key and value row read once and never copied. LibTorch's batched product packed
/// (copied) the whole cache per head and step, which bound a decode step after a long prompt.
class DecodeAttention {
public:
    /// Rows per KV head up to which the kernels run (a decode step's grouped query heads; more go to LibTorch).
    static constexpr int64_t kMaxRows = 16;

    /// Whether the kernels take these operands: CPU float32, `rows` [B, Hkv, R <= kMaxRows, D] and `states`
    /// [B, Hkv, KV, D'] with unit stride in the last dimension.
    static bool applies(const at::Tensor& rows, const at::Tensor& states);
    /// scores [B, Hkv, R, KV] = query [B, Hkv, R, D] . keys [B, Hkv, KV, D]^T (unscaled).
    static at::Tensor scores(const at::Tensor& query, const at::Tensor& keys);
    /// output [B, Hkv, R, D] = weights [B, Hkv, R, KV] . values [B, Hkv, KV, D].
    static at::Tensor output(const at::Tensor& weights, const at::Tensor& values);

    /// Whether attend() takes these operands: `query` [B, Hq, T, D] whose rows per KV head (T * Hq / Hkv) the
    /// kernels take (applies()) against both states, and a boolean `mask` [B|1, 1, T, KV] or none.
    static bool fuses(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                      const at::Tensor& mask);
    /// softmax(query . keys^T * scale where `mask` allows, per row) . values as [B, T, Hq * D], in one pass of the
    /// threads: each task scores a run of a KV head's keys, weighs them against the run's own maximum and sums
    /// their values; the runs then combine by their maxima (flash decoding). The scores and weights [.., KV]
    /// never exist as tensors. Undefined when a row sees no key (eager attention spreads such a row evenly over
    /// every key: the caller's products do that).
    static at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& mask, double scale);
};

} // namespace kvscope::model::ops
