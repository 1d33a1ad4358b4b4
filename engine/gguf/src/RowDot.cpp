// SPDX-License-Identifier: GPL-3.0-or-later
#include "RowDot.h"

#if KVSCOPE_ROWDOT_X86
#include <cpuid.h>
#endif

namespace kvscope::gguf::rowdot {

namespace {

float portableDot(const float* a, const float* b, size_t n) {
    // Eight partial sums: independent chains, and the order the AVX2 lanes add in.
    float sums[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; ++k) {
            sums[k] += a[i + k] * b[i + k];
        }
    }
    for (; i < n; ++i) {
        sums[i % 8] += a[i] * b[i];
    }
    float sum = 0.0f;
    for (float partial : sums) {
        sum += partial;
    }
    return sum;
}

#if KVSCOPE_ROWDOT_X86
KVSCOPE_AVX2 float avx2Dot(const float* a, const float* b, size_t n) {
    __m256 s0 = _mm256_setzero_ps();
    __m256 s1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    float sum = horizontalSum(_mm256_add_ps(s0, s1));
    for (; i < n; ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}
#endif

} // namespace

bool avx2() {
#if KVSCOPE_ROWDOT_X86
    // F16C from cpuid: clang's __builtin_cpu_supports does not name it.
    static const bool has = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        const bool f16c = __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
        return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return has;
#else
    return false;
#endif
}

float dot(const float* a, const float* b, size_t n) {
#if KVSCOPE_ROWDOT_X86
    if (avx2()) {
        return avx2Dot(a, b, n);
    }
#endif
    return portableDot(a, b, n);
}

} // namespace kvscope::gguf::rowdot
