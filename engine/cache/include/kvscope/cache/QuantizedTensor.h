// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvscope::cache {

/// A quantized tensor in a quantizer's grouped layout: one code per element, and per group a scale and
/// an offset (min-max: the group minimum; HQQ: the zero point).
struct QuantizedTensor {
    at::Tensor codes;  ///< uint8, grouped layout
    at::Tensor scale;  ///< per group
    at::Tensor offset; ///< per group
    int64_t axis = 0;
    std::vector<int64_t> shape; ///< the original tensor's shape
    at::ScalarType dtype = at::kFloat;
};

} // namespace kvscope::cache
