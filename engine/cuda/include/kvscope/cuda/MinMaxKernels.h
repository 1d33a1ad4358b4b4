// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cuda/MinMaxMath.h"

#include <cstdint>

namespace kvscope::cuda {

/// Fused CUDA kernels for the min-max quantizer's hot paths on float32 device memory, bit-identical to
/// LibTorch's CUDA operations in MinMaxQuantizer (see MinMaxMath.h). Raw device pointers and a
/// `cudaStream_t` passed as `void*`, so callers need neither CUDA nor torch headers; every call is
/// asynchronous on `stream` and returns a cudaError_t value (0 = success, see errorText).
class MinMaxKernels {
public:
    /// Group min/max and scale (`scale`, `lo`: one float per group), then the codes, packed at `codeBits`
    /// (2, 4 or 8 bits; 8 = one code per byte) in grouped-index order.
    static int quantize(const float* input, const GroupLayout& layout, int nbits, int codeBits,
                        uint8_t* packedCodes, float* scale, float* lo, void* stream);
    /// `code * scale + lo` into `output` in the original tensor's layout (e.g. the cache's buffer).
    static int dequantize(const uint8_t* packedCodes, int codeBits, const float* scale, const float* lo,
                          const GroupLayout& layout, float* output, void* stream);
    /// quantize then dequantize in one pass (no codes in memory): one warp per group.
    static int roundTrip(const float* input, const GroupLayout& layout, int nbits, float* output,
                         void* stream);
    /// The CUDA runtime's name for an error value.
    static const char* errorText(int error);
};

} // namespace kvscope::cuda
