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
    /// `kept` [..., n], the largest scores in any order, in torch.topk's order on the CPU: the order kvpress
    /// leaves a compressed cache in, which differs from the canonical one only inside runs of equal scores.
    /// `kept` itself where it is not the top of `scores` up to ties (a press that keeps by position).
    static at::Tensor torchOrder(const at::Tensor& scores, const at::Tensor& kept);
    /// `states` [B, Hkv, T, D] (or [B, Hkv, T]) at `indices` [B, Hkv, n] along the sequence.
    static at::Tensor gather(const at::Tensor& states, const at::Tensor& indices);
};

} // namespace kvscope::press
