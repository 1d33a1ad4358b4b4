// SPDX-License-Identifier: GPL-3.0-or-later
#include "RowKernels.h"

#include "VectorExp.h"

#include "kvscope/gguf/BlockType.h"

#include <cmath>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define KVSCOPE_ROW_KERNELS_X86 1
#define KVSCOPE_ROW_AVX2 __attribute__((target("avx2,fma")))
// Without FMA: GCC contracts a vector product and sum into one fused multiply-add (one rounding) where FMA is
// available, and the rotary embedding must round as LibTorch's separate operations do.
#define KVSCOPE_ROW_AVX2_UNFUSED __attribute__((target("avx2")))
#endif

namespace kvscope::model::ops::rows {

namespace {

// Transformers' GELU tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), LibTorch's constants.
constexpr float kGeluBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
constexpr float kGeluKappa = 0.044715f;

float activateScalar(float x, Activation activation) {
    if (activation == Activation::Silu) {
        return x / (1.0f + std::exp(-x));
    }
    const float cube = x * x * x;
    const float inner = kGeluBeta * (x + kGeluKappa * cube);
    return 0.5f * x * (1.0f + std::tanh(inner));
}

// The plain loops over values [from, to): the portable bodies, and the AVX2 bodies' tails past the last vector.
double addSquares(const float* x, int64_t from, int64_t to, double sum) {
    for (int64_t i = from; i < to; ++i) {
        sum += static_cast<double>(x[i]) * x[i];
    }
    return sum;
}

void scaleValues(const float* x, const float* scale, float inverse, bool addOne, int64_t from, int64_t to,
                 float* out) {
    for (int64_t i = from; i < to; ++i) {
        const float normalised = x[i] * inverse;
        out[i] = addOne ? normalised * (scale[i] + 1.0f) : scale[i] * normalised;
    }
}

/// Pairs [from, to) of the row's two halves: value i and value half + i.
void rotatePairs(const float* x, const float* cos, const float* sin, int64_t half, int64_t from, int64_t to,
                 float* out) {
    for (int64_t i = from; i < to; ++i) {
        const float directFirst = x[i] * cos[i];
        const float turnedFirst = -x[half + i] * sin[i];
        out[i] = directFirst + turnedFirst;
        const float directSecond = x[half + i] * cos[half + i];
        const float turnedSecond = x[i] * sin[half + i];
        out[half + i] = directSecond + turnedSecond;
    }
}

void gateValues(const float* gate, const float* up, Activation activation, int64_t from, int64_t to, float* out) {
    for (int64_t i = from; i < to; ++i) {
        out[i] = activateScalar(gate[i], activation) * up[i];
    }
}

#if KVSCOPE_ROW_KERNELS_X86
KVSCOPE_ROW_AVX2 double sumOfSquaresAvx2(const float* x, int64_t width) {
    __m256d low = _mm256_setzero_pd();
    __m256d high = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= width; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        low = _mm256_fmadd_pd(a, a, low);
        high = _mm256_fmadd_pd(b, b, high);
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(low, high));
    return addSquares(x, i, width, (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
}

KVSCOPE_ROW_AVX2 void scaleRowAvx2(const float* x, const float* scale, float inverse, bool addOne, int64_t width,
                                   float* out) {
    const __m256 inverses = _mm256_set1_ps(inverse);
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= width; i += 8) {
        const __m256 normalised = _mm256_mul_ps(_mm256_loadu_ps(x + i), inverses);
        const __m256 w = _mm256_loadu_ps(scale + i);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(normalised, addOne ? _mm256_add_ps(w, one) : w));
    }
    scaleValues(x, scale, inverse, addOne, i, width, out);
}

/// Products and sum rounded one by one (no fused multiply-add), as LibTorch's three operations round them.
KVSCOPE_ROW_AVX2_UNFUSED void rotateRowAvx2(const float* x, const float* cos, const float* sin, int64_t dim, float* out) {
    const int64_t half = dim / 2;
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= half; i += 8) {
        const __m256 first = _mm256_loadu_ps(x + i);
        const __m256 second = _mm256_loadu_ps(x + half + i);
        const __m256 directFirst = _mm256_mul_ps(first, _mm256_loadu_ps(cos + i));
        const __m256 turnedFirst = _mm256_mul_ps(_mm256_xor_ps(second, signBit), _mm256_loadu_ps(sin + i));
        _mm256_storeu_ps(out + i, _mm256_add_ps(directFirst, turnedFirst));
        const __m256 directSecond = _mm256_mul_ps(second, _mm256_loadu_ps(cos + half + i));
        const __m256 turnedSecond = _mm256_mul_ps(first, _mm256_loadu_ps(sin + half + i));
        _mm256_storeu_ps(out + half + i, _mm256_add_ps(directSecond, turnedSecond));
    }
    rotatePairs(x, cos, sin, half, i, half, out);
}

/// tanh(y) from e = exp(-2|y|) <= 1: (1 - e) / (1 + e) with y's sign, never overflowing.
KVSCOPE_ROW_AVX2 __m256 tanhAvx2(__m256 y) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    const __m256 magnitude = _mm256_andnot_ps(signBit, y);
    const __m256 e = expNonPositive(_mm256_mul_ps(magnitude, _mm256_set1_ps(-2.0f)));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    return _mm256_or_ps(t, _mm256_and_ps(y, signBit));
}

/// x * sigmoid(x) from e = exp(-|x|) <= 1: x / (1 + e) for x >= 0, x e / (1 + e) below.
KVSCOPE_ROW_AVX2 __m256 siluAvx2(__m256 x) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    const __m256 e = expNonPositive(_mm256_or_ps(x, signBit));
    const __m256 numerator = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), x);  // the sign bit picks x e
    return _mm256_div_ps(numerator, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

KVSCOPE_ROW_AVX2 __m256 geluTanhAvx2(__m256 x) {
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 inner =
        _mm256_mul_ps(_mm256_set1_ps(kGeluBeta), _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(kGeluKappa), cube)));
    const __m256 half = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
    return _mm256_mul_ps(half, _mm256_add_ps(_mm256_set1_ps(1.0f), tanhAvx2(inner)));
}

KVSCOPE_ROW_AVX2 void gateRowAvx2(const float* gate, const float* up, Activation activation, int64_t width,
                                  float* out) {
    int64_t i = 0;
    for (; i + 8 <= width; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 activated = activation == Activation::Silu ? siluAvx2(g) : geluTanhAvx2(g);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(activated, _mm256_loadu_ps(up + i)));
    }
    gateValues(gate, up, activation, i, width, out);
}
#endif

} // namespace

bool vectorised() {
#if KVSCOPE_ROW_KERNELS_X86
    return gguf::BlockType::kernelLevel() != gguf::KernelLevel::Portable;
#else
    return false;
#endif
}

double sumOfSquares(const float* x, int64_t width) {
#if KVSCOPE_ROW_KERNELS_X86
    if (vectorised()) {
        return sumOfSquaresAvx2(x, width);
    }
#endif
    return addSquares(x, 0, width, 0.0);
}

void scaleRow(const float* x, const float* scale, float inverse, bool addOne, int64_t width, float* out) {
#if KVSCOPE_ROW_KERNELS_X86
    if (vectorised()) {
        scaleRowAvx2(x, scale, inverse, addOne, width, out);
        return;
    }
#endif
    scaleValues(x, scale, inverse, addOne, 0, width, out);
}

void rotateRow(const float* x, const float* cos, const float* sin, int64_t dim, float* out) {
#if KVSCOPE_ROW_KERNELS_X86
    if (vectorised()) {
        rotateRowAvx2(x, cos, sin, dim, out);
        return;
    }
#endif
    rotatePairs(x, cos, sin, dim / 2, 0, dim / 2, out);
}

bool gatedActivates(Activation activation) {
    return activation == Activation::Silu || activation == Activation::GeluTanh;
}

void gateRow(const float* gate, const float* up, Activation activation, int64_t width, float* out) {
#if KVSCOPE_ROW_KERNELS_X86
    if (vectorised()) {
        gateRowAvx2(gate, up, activation, width, out);
        return;
    }
#endif
    gateValues(gate, up, activation, 0, width, out);
}

} // namespace kvscope::model::ops::rows
