// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::cache {

/// Validates beam indices for `index_select(0, beamIdx)`: every index in [0, batch), as the reference's
/// index_select demands (negative indices are refused there too). Returns int64 indices on `device`.
at::Tensor checkedBeamIndex(const at::Tensor& beamIdx, int64_t batch, const at::Device& device);
/// Validates indices for `tensor[indices, ...]`: Python indexing, so negatives count from the end;
/// returns them normalised to [0, batch), int64, on `device`.
at::Tensor checkedSelectIndex(const at::Tensor& indices, int64_t batch, const at::Device& device);

} // namespace kvscope::cache
