// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cuda/MinMaxKernels.h"

#include <algorithm>
#include <cuda_runtime.h>

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

dim3 blocksFor(int64_t work, int64_t perBlock) {
    return dim3(static_cast<unsigned>(std::min<int64_t>((work + perBlock - 1) / perBlock, kMaxBlocks)));
}

bool validWidth(int codeBits) {
    return codeBits == 2 || codeBits == 4 || codeBits == 8;
}

/// Codes of `nbits` must fit the packing width.
bool validBits(int nbits, int codeBits) {
    return validWidth(nbits) && validWidth(codeBits) && codeBits >= nbits;
}

/// Min and max of one group across a warp: every lane starts from element 0 (min and max are
/// idempotent), strides through the group, then the lanes combine by butterfly shuffles.
__device__ void warpRange(const float* input, const GroupLayout& layout, int64_t group, int lane, float& lo,
                          float& hi) {
    const int64_t stride = layout.stride();
    const float* first = input + layout.offset(group, 0);
    lo = first[0];
    hi = lo;
    for (int64_t i = lane; i < layout.groupSize; i += kWarp) {
        const float x = first[i * stride];
        lo = math::minimum(lo, x);
        hi = math::maximum(hi, x);
    }
    for (int mask = kWarp / 2; mask > 0; mask /= 2) {
        lo = math::minimum(lo, __shfl_xor_sync(0xffffffffu, lo, mask));
        hi = math::maximum(hi, __shfl_xor_sync(0xffffffffu, hi, mask));
    }
}

__global__ void statsKernel(const float* input, GroupLayout layout, float inverseLevels, float* scale,
                            float* lo) {
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int64_t warpsPerGrid = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t group = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
         group < layout.groups; group += warpsPerGrid) {
        float low = 0.0f;
        float high = 0.0f;
        warpRange(input, layout, group, lane, low, high);
        if (lane == 0) {
            scale[group] = math::scale(low, high, inverseLevels);
            lo[group] = low;
        }
    }
}

__global__ void encodeKernel(const float* input, GroupLayout layout, float levels, int codeBits,
                             const float* scale, const float* lo, uint8_t* packed, int64_t bytes) {
    const int perByte = math::codesPerByte(codeBits);
    const int64_t elements = layout.elements();
    for (int64_t byte = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; byte < bytes;
         byte += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        unsigned value = 0;
        for (int k = 0; k < perByte; ++k) {
            const int64_t index = byte * perByte + k;
            if (index >= elements) {
                break;
            }
            const int64_t group = layout.groupOfGroupedIndex(index);
            const float x = input[layout.offset(group, layout.elementOfGroupedIndex(index))];
            value |= static_cast<unsigned>(math::code(x, lo[group], scale[group], levels)) << (k * codeBits);
        }
        packed[byte] = static_cast<uint8_t>(value);
    }
}

__global__ void dequantizeKernel(const uint8_t* packed, int codeBits, const float* scale, const float* lo,
                                 GroupLayout layout, float* output) {
    const int64_t elements = layout.elements();
    for (int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < elements;
         index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t group = layout.groupOfGroupedIndex(index);
        output[layout.offset(group, layout.elementOfGroupedIndex(index))] =
            math::dequantized(math::unpack(packed, index, codeBits), scale[group], lo[group]);
    }
}

__global__ void roundTripKernel(const float* input, GroupLayout layout, float inverseLevels, float levels,
                                float* output) {
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int64_t stride = layout.stride();
    const int64_t warpsPerGrid = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t group = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
         group < layout.groups; group += warpsPerGrid) {
        float low = 0.0f;
        float high = 0.0f;
        warpRange(input, layout, group, lane, low, high);
        const float groupScale = math::scale(low, high, inverseLevels);
        const int64_t base = layout.offset(group, 0);
        for (int64_t i = lane; i < layout.groupSize; i += kWarp) {
            const int64_t at = base + i * stride;
            output[at] = math::dequantized(math::code(input[at], low, groupScale, levels), groupScale, low);
        }
    }
}

int launched() {
    return static_cast<int>(cudaGetLastError());
}

} // namespace

int MinMaxKernels::quantize(const float* input, const GroupLayout& layout, int nbits, int codeBits,
                            uint8_t* packedCodes, float* scale, float* lo, void* stream) {
    if (!validBits(nbits, codeBits)) {
        return static_cast<int>(cudaErrorInvalidValue);
    }
    if (layout.groups == 0) {
        return 0;
    }
    auto* onStream = static_cast<cudaStream_t>(stream);
    const int64_t warpsPerBlock = kThreads / kWarp;
    statsKernel<<<blocksFor(layout.groups, warpsPerBlock), kThreads, 0, onStream>>>(
        input, layout, math::inverseLevels(nbits), scale, lo);
    if (const int error = launched()) {
        return error;
    }
    const int64_t bytes = math::packedBytes(layout.elements(), codeBits);
    const auto levels = static_cast<float>((int64_t{1} << nbits) - 1);
    encodeKernel<<<blocksFor(bytes, kThreads), kThreads, 0, onStream>>>(input, layout, levels, codeBits,
                                                                        scale, lo, packedCodes, bytes);
    return launched();
}

int MinMaxKernels::dequantize(const uint8_t* packedCodes, int codeBits, const float* scale, const float* lo,
                              const GroupLayout& layout, float* output, void* stream) {
    if (!validWidth(codeBits)) {
        return static_cast<int>(cudaErrorInvalidValue);
    }
    if (layout.groups == 0) {
        return 0;
    }
    dequantizeKernel<<<blocksFor(layout.elements(), kThreads), kThreads, 0,
                       static_cast<cudaStream_t>(stream)>>>(packedCodes, codeBits, scale, lo, layout, output);
    return launched();
}

int MinMaxKernels::roundTrip(const float* input, const GroupLayout& layout, int nbits, float* output,
                             void* stream) {
    if (!validBits(nbits, 8)) {
        return static_cast<int>(cudaErrorInvalidValue);
    }
    if (layout.groups == 0) {
        return 0;
    }
    const int64_t warpsPerBlock = kThreads / kWarp;
    const auto levels = static_cast<float>((int64_t{1} << nbits) - 1);
    roundTripKernel<<<blocksFor(layout.groups, warpsPerBlock), kThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(input, layout, math::inverseLevels(nbits), levels,
                                                           output);
    return launched();
}

const char* MinMaxKernels::errorText(int error) {
    return cudaGetErrorString(static_cast<cudaError_t>(error));
}

} // namespace kvscope::cuda
