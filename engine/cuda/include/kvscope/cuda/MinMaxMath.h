// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

/// The per-element arithmetic of the min-max quantizer as LibTorch's CUDA kernels perform it, shared by
/// the fused kernels (device) and their CPU tests (host): one definition, so a test on a machine without
/// a GPU checks the very operations the kernels run. No CUDA or torch headers: it compiles with nvcc and
/// with the host compiler alike.

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define KVSCOPE_HOST_DEVICE __host__ __device__
#else
#define KVSCOPE_HOST_DEVICE
#endif

namespace kvscope::cuda {

/// Where the groups of a min-max quantizer lie in a contiguous tensor, in quanto's layout
/// (../shared/oracle/reference_quantizer.py `group`). Flat indices of the grouped tensor ("grouped
/// index") order the codes: axis 0 groups are rows of `groupSize` consecutive elements; axis -1 groups
/// are columns of the `[groupSize, channels * tokenGroups]` grouped tensor, one per channel over
/// `groupSize` consecutive rows (KIVI's key layout).
struct GroupLayout {
    int64_t groups = 0;
    int64_t groupSize = 0;
    bool perChannel = false; ///< axis -1
    int64_t channels = 1;    ///< axis -1: the last dimension
    int64_t tokenGroups = 1; ///< axis -1: numel / channels / groupSize

    /// The layout of a contiguous tensor of `numel` elements whose last dimension is `lastDim`, grouped
    /// along axis 0 or, with `perChannel`, along axis -1; the shape must group (MinMaxQuantizer::checkShape).
    static GroupLayout of(int64_t numel, int64_t lastDim, bool perChannel, int64_t groupSize) {
        GroupLayout layout;
        layout.groups = numel / groupSize;
        layout.groupSize = groupSize;
        layout.perChannel = perChannel;
        if (perChannel) {
            layout.channels = lastDim;
            layout.tokenGroups = numel / lastDim / groupSize;
        }
        return layout;
    }

    KVSCOPE_HOST_DEVICE int64_t elements() const { return groups * groupSize; }
    /// Offset in the original tensor of element `i` of group `group`.
    KVSCOPE_HOST_DEVICE int64_t offset(int64_t group, int64_t i) const {
        if (!perChannel) {
            return group * groupSize + i;
        }
        /// group = channel * tokenGroups + tokenGroup (the permute (1, 2, 0) of quanto's layout)
        const int64_t channel = group / tokenGroups;
        const int64_t tokenGroup = group % tokenGroups;
        return (tokenGroup * groupSize + i) * channels + channel;
    }
    /// Distance between consecutive elements of one group in the original tensor.
    KVSCOPE_HOST_DEVICE int64_t stride() const { return perChannel ? channels : 1; }
    KVSCOPE_HOST_DEVICE int64_t groupOfGroupedIndex(int64_t index) const {
        return perChannel ? index % groups : index / groupSize;
    }
    KVSCOPE_HOST_DEVICE int64_t elementOfGroupedIndex(int64_t index) const {
        return perChannel ? index / groups : index % groupSize;
    }
};

namespace math {

/// IEEE single-precision operations rounded to nearest, one rounding each: explicit intrinsics on the
/// device so that nvcc cannot contract a multiply and an add into one fused operation (LibTorch runs
/// them as separate kernels, each rounding its result).
KVSCOPE_HOST_DEVICE inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
KVSCOPE_HOST_DEVICE inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
KVSCOPE_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
KVSCOPE_HOST_DEVICE inline float div(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
/// torch.round: to nearest, ties to even.
KVSCOPE_HOST_DEVICE inline float roundHalfEven(float x) {
#if defined(__CUDA_ARCH__)
    return rintf(x);
#else
    return std::nearbyint(x);
#endif
}
KVSCOPE_HOST_DEVICE inline bool isNan(float x) {
    return x != x;
}

/// amin/amax: NaN wins, as in LibTorch's reductions.
KVSCOPE_HOST_DEVICE inline float minimum(float a, float b) {
    return (isNan(a) || a < b) ? a : b;
}
KVSCOPE_HOST_DEVICE inline float maximum(float a, float b) {
    return (isNan(a) || a > b) ? a : b;
}

/// LibTorch's clamp kernels: NaN passes through.
KVSCOPE_HOST_DEVICE inline float clampMin(float x, float lower) {
    return isNan(x) ? x : (x < lower ? lower : x);
}
KVSCOPE_HOST_DEVICE inline float clamp(float x, float lower, float upper) {
    if (isNan(x)) {
        return x;
    }
    const float raised = x < lower ? lower : x;
    return raised > upper ? upper : raised;
}

/// `1 / levels` as LibTorch's CUDA division by a CPU scalar computes it: `(hi - lo) / levels` runs as
/// `(hi - lo) * (1 / levels)` there (BinaryDivTrueKernel.cu), unlike on the CPU.
KVSCOPE_HOST_DEVICE inline float inverseLevels(int nbits) {
    return 1.0f / static_cast<float>((int64_t{1} << nbits) - 1);
}

/// `((hi - lo) / levels).clamp_min(1e-8)`.
KVSCOPE_HOST_DEVICE inline float scale(float lo, float hi, float inverseLevels) {
    return clampMin(mul(sub(hi, lo), inverseLevels), static_cast<float>(1e-8));
}

/// `clamp(round((x - lo) / scale), 0, levels).to(uint8)`; the conversion goes through int64 as c10's
/// cast to uint8 does.
KVSCOPE_HOST_DEVICE inline uint8_t code(float x, float lo, float scale, float levels) {
    const float rounded = roundHalfEven(div(sub(x, lo), scale));
    return static_cast<uint8_t>(static_cast<int64_t>(clamp(rounded, 0.0f, levels)));
}

/// `codes.to(float) * scale + lo`.
KVSCOPE_HOST_DEVICE inline float dequantized(uint8_t code, float scale, float lo) {
    return add(mul(static_cast<float>(code), scale), lo);
}

/// Codes are packed in grouped-index order, 8 / nbits to a byte, the first in the lowest bits.
KVSCOPE_HOST_DEVICE inline int codesPerByte(int codeBits) {
    return 8 / codeBits;
}
KVSCOPE_HOST_DEVICE inline int64_t packedBytes(int64_t codes, int codeBits) {
    return (codes + codesPerByte(codeBits) - 1) / codesPerByte(codeBits);
}
KVSCOPE_HOST_DEVICE inline uint8_t unpack(const uint8_t* packed, int64_t index, int codeBits) {
    const int perByte = codesPerByte(codeBits);
    const int shift = static_cast<int>(index % perByte) * codeBits;
    return static_cast<uint8_t>((packed[index / perByte] >> shift) & ((1u << codeBits) - 1u));
}

} // namespace math
} // namespace kvscope::cuda
