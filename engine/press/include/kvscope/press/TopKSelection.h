// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::press {

/// The one token selection every press uses: the top `count` scores per row in the canonical order
/// (score descending, index ascending), which is kvpress's torch.topk order wherever scores differ.
class TopKSelection {
public:
    /// Indices [..., count] of the largest `count` scores along the last dimension.
    static at::Tensor largest(const at::Tensor& scores, int64_t count);
    /// Indices [..., count] of the smallest `count` scores along the last dimension (index ascending in ties).
    static at::Tensor smallest(const at::Tensor& scores, int64_t count);
    /// `states` [B, Hkv, T, D] (or [B, Hkv, T]) at `indices` [B, Hkv, n] along the sequence.
    static at::Tensor gather(const at::Tensor& states, const at::Tensor& indices);
};

} // namespace kvscope::press
