// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The pieces BlockType::dotRow's kernels share: float dot products, and a loop over a row of 32-value blocks
// whose decoder gives each block's values as four AVX2 vectors. AVX2 code runs only where the CPU has it
// (checked once at run time); elsewhere the portable loops run.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KVSCOPE_ROWDOT_X86 1
#define KVSCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace kvscope::gguf::rowdot {

/// Whether this CPU runs the AVX2/FMA/F16C kernels.
bool avx2();
/// The dot product of `n` floats.
float dot(const float* a, const float* b, size_t n);

#if KVSCOPE_ROWDOT_X86
/// An fp16 scale widened by the F16C instruction (exact, as halfToFloat).
KVSCOPE_AVX2 inline float loadHalfF16c(const uint8_t* p) {
    return _cvtsh_ss(static_cast<unsigned short>(p[0] | (p[1] << 8)));
}

/// One block's 32 values, 8 per vector, in order.
struct Block32 {
    __m256 v[4];
};

KVSCOPE_AVX2 inline float horizontalSum(__m256 v) {
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
    sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
    return _mm_cvtss_f32(sum);
}

/// 32 byte codes as four vectors of floats: bytes 0-7 and 8-15 of `low`, then of `high`.
KVSCOPE_AVX2 inline Block32 widenBytes(__m128i low, __m128i high) {
    return {{_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(low)),
             _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(low, 8))),
             _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(high)),
             _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8)))}};
}

/// `blockCount` 32-value blocks widened to floats through `decode` (dequantize()'s own arithmetic, vectorised).
template <typename Decode>
KVSCOPE_AVX2 inline void widenBlocks32(const uint8_t* blocks, size_t typeSize, size_t blockCount, float* out,
                                       const Decode& decode) {
    for (size_t b = 0; b < blockCount; ++b, out += 32) {
        const Block32 w = decode(blocks + b * typeSize);
        for (int k = 0; k < 4; ++k) {
            _mm256_storeu_ps(out + 8 * k, w.v[k]);
        }
    }
}

/// One block as codes and scale: its values are d * codes + m (m = 0 for a type without an offset).
struct ScaledBlock32 {
    __m256 codes[4];
    __m256 d;
    __m256 m;
};

/// out[t] for a row of 32-value blocks of `typeSize` bytes, `decode(block)` giving each block's codes, scale
/// and offset: d * (codes . x) + m * (sum of x) per block, so that a block costs four FMAs and no per-value
/// scaling (the values differ from dequantize()'s by one float rounding, as the order of the sums does).
/// Inputs go two at a time.
template <bool kOffset, typename Decode>
KVSCOPE_AVX2 inline void dotBlocks32(const uint8_t* blocks, size_t typeSize, size_t blockCount, const float* inputs,
                                     size_t inputCount, size_t inputStride, float* out, const Decode& decode) {
    for (size_t first = 0; first < inputCount; first += 2) {
        const size_t count = std::min<size_t>(2, inputCount - first);
        __m256 scaled[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        __m256 offset[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        const float* x[2] = {inputs + first * inputStride, inputs + (first + 1) * inputStride};
        for (size_t b = 0; b < blockCount; ++b) {
            const ScaledBlock32 w = decode(blocks + b * typeSize);
            const size_t at = b * 32;
            for (size_t t = 0; t < count; ++t) {
                const __m256 x0 = _mm256_loadu_ps(x[t] + at);
                const __m256 x1 = _mm256_loadu_ps(x[t] + at + 8);
                const __m256 x2 = _mm256_loadu_ps(x[t] + at + 16);
                const __m256 x3 = _mm256_loadu_ps(x[t] + at + 24);
                const __m256 dot = _mm256_add_ps(_mm256_fmadd_ps(w.codes[0], x0, _mm256_mul_ps(w.codes[1], x1)),
                                                 _mm256_fmadd_ps(w.codes[2], x2, _mm256_mul_ps(w.codes[3], x3)));
                scaled[t] = _mm256_fmadd_ps(w.d, dot, scaled[t]);
                if constexpr (kOffset) {
                    offset[t] = _mm256_fmadd_ps(w.m, _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                                                offset[t]);
                }
            }
        }
        for (size_t t = 0; t < count; ++t) {
            out[first + t] = horizontalSum(kOffset ? _mm256_add_ps(scaled[t], offset[t]) : scaled[t]);
        }
    }
}
#endif

} // namespace kvscope::gguf::rowdot
