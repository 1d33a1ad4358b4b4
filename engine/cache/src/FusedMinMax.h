// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/QuantizedTensor.h"

#include <cstdint>

namespace kvscope::cache {

/// MinMaxQuantizer's operations on CUDA float32 tensors through the fused kernels of engine/cuda
/// (bit-identical to its LibTorch operations on CUDA); built only against a LibTorch with CUDA. Inputs
/// are contiguous and already checked by the quantizer; results are on the input's device, written on
/// its current stream.
class FusedMinMax {
public:
    static QuantizedTensor quantize(const at::Tensor& tensor, int64_t axis, int nbits, int64_t groupSize);
    static at::Tensor dequantize(const QuantizedTensor& quantized);
    static at::Tensor roundTrip(const at::Tensor& tensor, int64_t axis, int nbits, int64_t groupSize);
};

} // namespace kvscope::cache
