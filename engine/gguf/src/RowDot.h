// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The pieces BlockType::dotRow's kernels share: float dot products, and a loop over a row of 32-value blocks
// whose decoder gives each block's values as four AVX2 vectors. AVX2 code runs only where the CPU has it
// (checked once at run time); elsewhere the portable loops run.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kvscope/gguf/BlockType.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KVSCOPE_ROWDOT_X86 1
#define KVSCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
// The AVX-512 level: F, BW, VL and VNNI (Ice Lake, Zen 4 and later); its integer kernel stays 256 bits wide.
#define KVSCOPE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#endif

namespace kvscope::gguf::rowdot {

using gguf::SplitRow;

/// Whether the AVX2/FMA/F16C kernels run (BlockType::kernelLevel(): the processor has them, none lower chosen).
bool avx2();
/// Whether the AVX-512 level runs too (F, BW, VL, VNNI): dotSplit's integer products then go through vpdpwssd.
/// The float kernels stay AVX2 there: a 512-bit product per block was slower on Zen 4 (IQ4_NL's decode row 0.22
/// -> 0.53 ms, Q5_1's 0.26 -> 0.41; PackedMatrixBenchmark).
bool avx512();
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

/// 32 unsigned byte codes as four vectors of floats, in order.
KVSCOPE_AVX2 inline Block32 widenUnsigned32(__m256i codes) {
    const __m128i low = _mm256_castsi256_si128(codes);
    const __m128i high = _mm256_extracti128_si256(codes, 1);
    return widenBytes(low, high);
}

/// 32 signed byte codes as four vectors of floats, in order.
KVSCOPE_AVX2 inline Block32 widenSigned32(__m256i codes) {
    const __m128i low = _mm256_castsi256_si128(codes);
    const __m128i high = _mm256_extracti128_si256(codes, 1);
    return {{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(low)),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(low, 8))),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(high)),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(high, 8)))}};
}

/// 32 bits as 32 bytes, 0xff where the bit is set (bit i of `bits` for byte i; ggml's bytes_from_bits_32).
KVSCOPE_AVX2 inline __m256i bitsToBytes(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                               _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                 0x0101010101010101, 0x0000000000000000));
    const __m256i others = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(others, _mm256_set1_epi64x(-1));
}

/// 16 bytes of nibble pairs as 32 codes in a block's order: the low nibbles, then the high ones.
KVSCOPE_AVX2 inline __m256i nibblesLowThenHigh(const uint8_t* bytes) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
    const __m128i nibble = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble), _mm_and_si128(packed, nibble));
}

/// Bits `shift` .. `shift + width - 1` of each of 32 bytes, as a byte each.
KVSCOPE_AVX2 inline __m256i bitField(__m256i bytes, int shift, int mask) {
    return _mm256_and_si256(_mm256_srl_epi16(bytes, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(static_cast<char>(mask)));
}

/// out[i] = scale * codes[i], then minus `offset` when given: numpy's d * q - m, two roundings (no fused
/// multiply-add: the values are dequantize()'s to the bit), for 8 values.
KVSCOPE_AVX2 inline void storeScaled(float* out, __m256 codes, float scale) {
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_set1_ps(scale), codes));
}
KVSCOPE_AVX2 inline void storeScaledLess(float* out, __m256 codes, float scale, float offset) {
    _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(scale), codes), _mm256_set1_ps(offset)));
}

/// scale * codes - offset for a whole block of 32 (storeScaledLess on each of its four vectors).
KVSCOPE_AVX2 inline void storeBlockScaledLess(float* out, const Block32& codes, float scale, float offset) {
    for (int v = 0; v < 4; ++v) {
        storeScaledLess(out + 8 * v, codes.v[v], scale, offset);
    }
}

/// `blockCount` blocks of `kValues` values widened by `widen(block, out)`, which writes dequantize()'s values.
template <size_t kValues, typename Widen>
KVSCOPE_AVX2 inline void widenBlocks(const uint8_t* blocks, size_t typeSize, size_t blockCount, float* out,
                                     const Widen& widen) {
    for (size_t b = 0; b < blockCount; ++b) {
        widen(blocks + b * typeSize, out + b * kValues);
    }
}

/// out[t] for a row of `blockCount` blocks of `kValues` values: each block widened once by `widen` into a
/// buffer that stays in the first-level cache (exactly dequantize()'s values), then dotted with up to four
/// inputs. The products are the widened row's; only the order of the sums is the kernel's.
template <size_t kValues, typename Widen>
KVSCOPE_AVX2 inline void dotWidened(const uint8_t* blocks, size_t typeSize, size_t blockCount, const float* inputs,
                                    size_t inputCount, size_t inputStride, float* out, const Widen& widen) {
    static_assert(kValues % 16 == 0);
    alignas(64) float values[kValues];
    for (size_t first = 0; first < inputCount; first += 4) {
        const size_t count = std::min<size_t>(4, inputCount - first);
        __m256 sums[4][2];
        for (auto& pair : sums) {
            pair[0] = _mm256_setzero_ps();
            pair[1] = _mm256_setzero_ps();
        }
        for (size_t b = 0; b < blockCount; ++b) {
            widen(blocks + b * typeSize, values);
            const float* x[4];
            for (size_t t = 0; t < count; ++t) {
                x[t] = inputs + (first + t) * inputStride + b * kValues;
            }
            for (size_t t = 0; t < count; ++t) {
                __m256 s0 = sums[t][0];
                __m256 s1 = sums[t][1];
                for (size_t i = 0; i < kValues; i += 16) {
                    s0 = _mm256_fmadd_ps(_mm256_load_ps(values + i), _mm256_loadu_ps(x[t] + i), s0);
                    s1 = _mm256_fmadd_ps(_mm256_load_ps(values + i + 8), _mm256_loadu_ps(x[t] + i + 8), s1);
                }
                sums[t][0] = s0;
                sums[t][1] = s1;
            }
        }
        for (size_t t = 0; t < count; ++t) {
            out[first + t] = horizontalSum(_mm256_add_ps(sums[t][0], sums[t][1]));
        }
    }
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

/// One block's share of a dot product: d * (codes . x) into `scaled`, m * (sum of x) into `offset`.
template <bool kOffset>
KVSCOPE_AVX2 inline void accumulateBlock32(const ScaledBlock32& w, const float* x, __m256& scaled, __m256& offset) {
    const __m256 x0 = _mm256_loadu_ps(x);
    const __m256 x1 = _mm256_loadu_ps(x + 8);
    const __m256 x2 = _mm256_loadu_ps(x + 16);
    const __m256 x3 = _mm256_loadu_ps(x + 24);
    const __m256 dot = _mm256_add_ps(_mm256_fmadd_ps(w.codes[0], x0, _mm256_mul_ps(w.codes[1], x1)),
                                     _mm256_fmadd_ps(w.codes[2], x2, _mm256_mul_ps(w.codes[3], x3)));
    scaled = _mm256_fmadd_ps(w.d, dot, scaled);
    if constexpr (kOffset) {
        offset = _mm256_fmadd_ps(w.m, _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)), offset);
    }
}

/// dotBlocks32 for exactly kInputs (1 or 2) inputs, `x[0]` and `x[kInputs - 1]`. The count is a compile-time
/// constant so that the sums stay in registers: indexed by a run-time count they lived in memory, and every
/// block waited on a store and a load (a decode row ran at a third of this speed).
template <size_t kInputs, bool kOffset, typename Decode>
KVSCOPE_AVX2 inline void dotBlocks32Inputs(const uint8_t* blocks, size_t typeSize, size_t blockCount,
                                           const float* x0, const float* x1, float* out, const Decode& decode) {
    static_assert(kInputs == 1 || kInputs == 2);
    __m256 scaled0 = _mm256_setzero_ps();
    __m256 offset0 = _mm256_setzero_ps();
    __m256 scaled1 = _mm256_setzero_ps();
    __m256 offset1 = _mm256_setzero_ps();
    for (size_t b = 0; b < blockCount; ++b) {
        const ScaledBlock32 w = decode(blocks + b * typeSize);
        accumulateBlock32<kOffset>(w, x0 + b * 32, scaled0, offset0);
        if constexpr (kInputs == 2) {
            accumulateBlock32<kOffset>(w, x1 + b * 32, scaled1, offset1);
        }
    }
    out[0] = horizontalSum(kOffset ? _mm256_add_ps(scaled0, offset0) : scaled0);
    if constexpr (kInputs == 2) {
        out[1] = horizontalSum(kOffset ? _mm256_add_ps(scaled1, offset1) : scaled1);
    }
}

/// out[t] for a row of 32-value blocks of `typeSize` bytes, `decode(block)` giving each block's codes, scale
/// and offset: d * (codes . x) + m * (sum of x) per block, so that a block costs four FMAs and no per-value
/// scaling (the values differ from dequantize()'s by one float rounding, as the order of the sums does).
/// Inputs go two at a time.
template <bool kOffset, typename Decode>
KVSCOPE_AVX2 inline void dotBlocks32(const uint8_t* blocks, size_t typeSize, size_t blockCount, const float* inputs,
                                     size_t inputCount, size_t inputStride, float* out, const Decode& decode) {
    size_t first = 0;
    for (; first + 2 <= inputCount; first += 2) {
        dotBlocks32Inputs<2, kOffset>(blocks, typeSize, blockCount, inputs + first * inputStride,
                                      inputs + (first + 1) * inputStride, out + first, decode);
    }
    if (first < inputCount) {
        const float* x = inputs + first * inputStride;
        dotBlocks32Inputs<1, kOffset>(blocks, typeSize, blockCount, x, x, out + first, decode);
    }
}

/// How far ahead of its reads a row's kernel asks for the matrix's bytes: a decode step streams every weight from
/// memory once, and the processor's own prefetcher starts again at every task's first row.
constexpr size_t kPrefetchBytes = 1024;

/// One 32-value block as integer codes for dotSplit: values 0-15 and 16-31 as 16-bit integers, and the block's
/// scale d (lane 0 of `scales`) and offset m (lane 1): its values are d * code + m.
struct Codes32 {
    __m256i low;
    __m256i high;
    __m128 scales;
};

/// The fp16 pair at `p` (d then m) widened: d in lane 0, m in lane 1. Reads four bytes: for a type without an
/// offset whose d is followed by more of its block, lane 1 is that block's next bytes, unused.
KVSCOPE_AVX2 inline __m128 loadHalfPair(const uint8_t* p) {
    int32_t pair;
    std::memcpy(&pair, p, sizeof(pair));
    return _mm_cvtph_ps(_mm_cvtsi32_si128(pair));
}

/// The fp16 value at `p` widened into lane 0 (lane 1 zero: no offset), reading only its two bytes.
KVSCOPE_AVX2 inline __m128 loadHalfScale(const uint8_t* p) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128(p[0] | (p[1] << 8)));
}

/// One split row's running sums against a row of blocks: the codes times the row's high halves, times its low
/// halves (each block's share scaled by its d), and the offsets m times the block sums.
struct SplitSum {
    __m256 high;
    __m256 low;
    float offset;
};

/// The 32 products of one group's codes (values 0-15 in `low`, 16-31 in `high`) with 32 16-bit halves of a split
/// row, as eight exact 32-bit sums.
KVSCOPE_AVX2 inline __m256i splitProducts(__m256i low, __m256i high, const int16_t* x) {
    return _mm256_add_epi32(_mm256_madd_epi16(low, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))),
                            _mm256_madd_epi16(high, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16))));
}

/// splitProducts with AVX-512 VNNI: vpdpwssd adds the second sixteen values' products into the first's, one
/// instruction where AVX2 takes a multiply and an add (the same integers).
KVSCOPE_AVX512 inline __m256i splitProductsVnni(__m256i low, __m256i high, const int16_t* x) {
    return _mm256_dpwssd_epi32(_mm256_madd_epi16(low, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))), high,
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16)));
}

/// Asks for the bytes kPrefetchBytes ahead of a block of `kValues` values.
template <size_t kValues>
KVSCOPE_AVX2 inline void prefetchAhead(const uint8_t* block) {
    _mm_prefetch(reinterpret_cast<const char*>(block) + kPrefetchBytes, _MM_HINT_T0);
    if constexpr (kValues > 64) {
        _mm_prefetch(reinterpret_cast<const char*>(block) + kPrefetchBytes + 64, _MM_HINT_T0);
    }
}

/// dotSplit's result for one row: the high and low sums each by the row's scale, plus the offsets.
KVSCOPE_AVX2 inline float splitResult(const SplitRow& x, const SplitSum& sum) {
    return x.highScale * horizontalSum(sum.high) + x.lowScale * horizontalSum(sum.low) + sum.offset;
}

// accumulateSplit32 and dotSplit (AVX2), accumulateSplit32Vnni and dotSplitAvx512 (the same with VNNI's products;
// the decoders are the AVX2 ones): one body, compiled for each instruction set.
#define KVSCOPE_DOT_SPLIT_TARGET KVSCOPE_AVX2
#define KVSCOPE_DOT_SPLIT_NAME dotSplit
#define KVSCOPE_DOT_SPLIT_ACCUMULATE accumulateSplit32
#define KVSCOPE_DOT_SPLIT_PRODUCTS splitProducts
#include "DotSplit.inc"
#undef KVSCOPE_DOT_SPLIT_TARGET
#undef KVSCOPE_DOT_SPLIT_NAME
#undef KVSCOPE_DOT_SPLIT_ACCUMULATE
#undef KVSCOPE_DOT_SPLIT_PRODUCTS
#define KVSCOPE_DOT_SPLIT_TARGET KVSCOPE_AVX512
#define KVSCOPE_DOT_SPLIT_NAME dotSplitAvx512
#define KVSCOPE_DOT_SPLIT_ACCUMULATE accumulateSplit32Vnni
#define KVSCOPE_DOT_SPLIT_PRODUCTS splitProductsVnni
#include "DotSplit.inc"
#undef KVSCOPE_DOT_SPLIT_TARGET
#undef KVSCOPE_DOT_SPLIT_NAME
#undef KVSCOPE_DOT_SPLIT_ACCUMULATE
#undef KVSCOPE_DOT_SPLIT_PRODUCTS
#endif

} // namespace kvscope::gguf::rowdot
