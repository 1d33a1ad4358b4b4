// SPDX-License-Identifier: GPL-3.0-or-later
#include "RowDot.h"

#include "kvscope/gguf/BlockType.h"

#if KVSCOPE_ROWDOT_X86
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>

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

namespace {

KernelLevel supported() {
#if KVSCOPE_ROWDOT_X86
    // F16C from cpuid: clang's __builtin_cpu_supports does not name it.
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
    if (!(f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        return KernelLevel::Portable;
    }
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    return avx512 ? KernelLevel::Avx512 : KernelLevel::Avx2;
#else
    return KernelLevel::Portable;
#endif
}

/// The level in use, chosen once from the processor and KVSCOPE_GGUF_KERNELS.
std::atomic<KernelLevel>& current() {
    static std::atomic<KernelLevel> level = [] {
        KernelLevel chosen = supported();
        if (const char* asked = std::getenv("KVSCOPE_GGUF_KERNELS")) {
            if (std::strcmp(asked, "portable") == 0) {
                chosen = KernelLevel::Portable;
            } else if (std::strcmp(asked, "avx2") == 0 && chosen > KernelLevel::Avx2) {
                chosen = KernelLevel::Avx2;
            }
        }
        return chosen;
    }();
    return level;
}

} // namespace

bool avx2() {
    return current().load(std::memory_order_relaxed) >= KernelLevel::Avx2;
}

bool avx512() {
    return current().load(std::memory_order_relaxed) >= KernelLevel::Avx512;
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

namespace kvscope::gguf {
KernelLevel BlockType::kernelLevel() {
    return rowdot::current().load();
}

KernelLevel BlockType::supportedKernelLevel() {
    static const KernelLevel level = rowdot::supported();
    return level;
}

KernelLevel BlockType::useKernelLevel(KernelLevel level) {
    const KernelLevel used = std::min(level, supportedKernelLevel());
    rowdot::current().store(used);
    return used;
}

const char* BlockType::kernelLevelName(KernelLevel level) {
    switch (level) {
    case KernelLevel::Portable:
        return "portable";
    case KernelLevel::Avx2:
        return "avx2";
    case KernelLevel::Avx512:
        return "avx512";
    }
    return "portable";
}

} // namespace kvscope::gguf
