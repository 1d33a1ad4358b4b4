// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/SplitActivation.h"

#include "kvscope/gguf/GgufError.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace kvscope::gguf {

namespace {

#if defined(__x86_64__) || defined(_M_X64)
#define KVSCOPE_SPLIT_AVX2 __attribute__((target("avx2,fma")))

/// One row's halves, eight values at a time: h = round(x / s), l = round((x - h s) / t) with the remainder taken by
/// one fused multiply-add (|x - s h - t l| <= t / 2 and float32's rounding of a remainder under s / 2, 2^-9 of that).
/// False when a value is not finite.
KVSCOPE_SPLIT_AVX2 bool splitRowAvx2(const float* x, size_t width, int16_t* high, int16_t* low, float* sums,
                                     float& highScale, float& lowScale) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    const __m256 infinity = _mm256_set1_ps(INFINITY);
    __m256 largest = _mm256_setzero_ps();
    __m256 finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (size_t i = 0; i < width; i += 8) {
        const __m256 magnitude = _mm256_andnot_ps(signBit, _mm256_loadu_ps(x + i));
        finite = _mm256_and_ps(finite, _mm256_cmp_ps(magnitude, infinity, _CMP_LT_OQ));
        largest = _mm256_max_ps(largest, magnitude);
    }
    if (_mm256_movemask_ps(finite) != 0xff) {
        return false;
    }
    __m128 top = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
    top = _mm_max_ps(top, _mm_movehl_ps(top, top));
    top = _mm_max_ss(top, _mm_movehdup_ps(top));
    const float most = _mm_cvtss_f32(top);
    const float s = most > 0.0f ? most / 32767.0f : 1.0f;
    highScale = s;
    lowScale = static_cast<float>(static_cast<double>(s) / 32768.0);
    const __m256 scale = _mm256_set1_ps(s);
    const __m256 inverse = _mm256_set1_ps(1.0f / s);
    const __m256 lowInverse = _mm256_set1_ps(32768.0f / s);
    const __m256 limit = _mm256_set1_ps(32767.0f);
    const __m256 negativeLimit = _mm256_set1_ps(-32767.0f);
    for (size_t b = 0; b < width; b += 32) {
        __m256d total = _mm256_setzero_pd();
        for (size_t i = b; i < b + 32; i += 16) {
            __m256i halves[2][2];
            for (int part = 0; part < 2; ++part) {
                const __m256 value = _mm256_loadu_ps(x + i + 8 * part);
                const __m256 h = _mm256_min_ps(limit, _mm256_max_ps(negativeLimit, _mm256_round_ps(_mm256_mul_ps(value, inverse), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
                const __m256 remainder = _mm256_fnmadd_ps(h, scale, value);
                const __m256 l = _mm256_min_ps(limit, _mm256_max_ps(negativeLimit, _mm256_round_ps(_mm256_mul_ps(remainder, lowInverse), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
                halves[0][part] = _mm256_cvtps_epi32(h);
                halves[1][part] = _mm256_cvtps_epi32(l);
                total = _mm256_add_pd(total, _mm256_cvtps_pd(_mm256_castps256_ps128(value)));
                total = _mm256_add_pd(total, _mm256_cvtps_pd(_mm256_extractf128_ps(value, 1)));
            }
            // packs interleaves the 128-bit lanes: the permute puts the sixteen values back in order.
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(high + i),
                                _mm256_permute4x64_epi64(_mm256_packs_epi32(halves[0][0], halves[0][1]), 0xd8));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(low + i),
                                _mm256_permute4x64_epi64(_mm256_packs_epi32(halves[1][0], halves[1][1]), 0xd8));
        }
        const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(total), _mm256_extractf128_pd(total, 1));
        sums[b / 32] = static_cast<float>(_mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair))));
    }
    return true;
}
#endif

/// The portable split, in double: h = round(x / s), l = round((x - h s) / t), the remainder exact.
bool splitRowPortable(const float* x, size_t width, int16_t* high, int16_t* low, float* sums, float& highScale,
                      float& lowScale) {
    float largest = 0.0f;
    for (size_t i = 0; i < width; ++i) {
        if (!std::isfinite(x[i])) {
            return false;
        }
        largest = std::max(largest, std::fabs(x[i]));
    }
    // s is a float (and t = s / 2^15 too), so that the kernels scale by exactly the s the split used.
    const double s = largest > 0.0f ? static_cast<double>(largest / 32767.0f) : 1.0;
    const double t = s / 32768.0;
    for (size_t b = 0; b < width / 32; ++b) {
        double sum = 0.0;
        for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
            const double value = x[i];
            const double h = std::clamp(std::nearbyint(value / s), -32767.0, 32767.0);
            const double l = std::clamp(std::nearbyint((value - h * s) / t), -32767.0, 32767.0);
            high[i] = static_cast<int16_t>(h);
            low[i] = static_cast<int16_t>(l);
            sum += value;
        }
        sums[b] = static_cast<float>(sum);
    }
    highScale = static_cast<float>(s);
    lowScale = static_cast<float>(t);
    return true;
}

} // namespace

bool SplitActivation::split(const float* values, size_t rows, size_t width, size_t stride) {
    if (width % 32 != 0) {
        throw GgufError("activation rows of " + std::to_string(width) + " values are not whole blocks of 32");
    }
    // q, k and v (gate and up) multiply the same rows: their split is the last one, found by its values.
    const bool same = m_splitRows == rows && m_width == width && m_source.size() == rows * width &&
                      [&] {
                          for (size_t r = 0; r < rows; ++r) {
                              if (std::memcmp(values + r * stride, m_source.data() + r * width,
                                              width * sizeof(float)) != 0) {
                                  return false;
                              }
                          }
                          return true;
                      }();
    if (same) {
        return true;
    }
    m_splitRows = 0;
    m_high.resize(rows * width);
    m_low.resize(rows * width);
    m_sums.resize(rows * width / 32);
    m_rows.resize(rows);
    m_source.resize(rows * width);
#if defined(__x86_64__) || defined(_M_X64)
    const bool avx2 = BlockType::kernelLevel() != KernelLevel::Portable;
#else
    const bool avx2 = false;
#endif
    for (size_t r = 0; r < rows; ++r) {
        const float* x = values + r * stride;
        int16_t* high = m_high.data() + r * width;
        int16_t* low = m_low.data() + r * width;
        float* sums = m_sums.data() + r * width / 32;
        SplitRow& row = m_rows[r];
#if defined(__x86_64__) || defined(_M_X64)
        const bool finite = avx2 ? splitRowAvx2(x, width, high, low, sums, row.highScale, row.lowScale)
                                 : splitRowPortable(x, width, high, low, sums, row.highScale, row.lowScale);
#else
        const bool finite = splitRowPortable(x, width, high, low, sums, row.highScale, row.lowScale);
#endif
        if (!finite) {
            return false;
        }
        row.high = high;
        row.low = low;
        row.blockSums = sums;
        std::memcpy(m_source.data() + r * width, x, width * sizeof(float));
    }
    m_splitRows = rows;
    m_width = width;
    return true;
}

} // namespace kvscope::gguf
