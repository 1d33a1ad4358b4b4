// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

namespace kvscope::model::ops {

/// The two products of a decode step's attention over the cache, on CPU threads: each KV head's few query rows
/// (its grouped query heads for one or a few new tokens) against its keys and values, every key and value row
/// read once and never copied. LibTorch's batched product packed (copied) the whole cache per head and step,
/// which bound a decode step after a long prompt.
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
};

} // namespace kvscope::model::ops
