// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::cache {

/// Writes `states` `[batch, heads, tokens, head_dim]` into `destination` (same layout) at token
/// `position`. On CPU, with matching dtypes and rows contiguous in the last dimension, this is one
/// memcpy per (batch, head): LibTorch's generic `narrow().copy_()` costs microseconds of dispatch
/// for the few hundred bytes a decode step writes.
void copyTokens(const at::Tensor& destination, int64_t position, const at::Tensor& states);

} // namespace kvscope::cache

namespace kvscope::cache {

/// `base.narrow(2, begin, length)` without a trip through the dispatcher (which costs as much as a
/// decode step's copy): a new tensor sharing `base`'s storage with adjusted size and offset.
at::Tensor narrowTokens(const at::Tensor& base, int64_t begin, int64_t length);

} // namespace kvscope::cache
