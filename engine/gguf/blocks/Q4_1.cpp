// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_1: fp16 d and m, then 16 bytes of nibbles: y = d * q + m.
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"
#include "RowDot.h"
#include "SplitRowKernels.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

#if KVSCOPE_ROWDOT_X86
/// A block's values as dequantize() gives them (d * q, then + m: two roundings), four vectors of 8.
struct DecodeAvx2 {
    KVSCOPE_AVX2 rowdot::Block32 operator()(const uint8_t* block) const {
        const __m256 d = _mm256_set1_ps(rowdot::loadHalfF16c(block));
        const __m256 m = _mm256_set1_ps(rowdot::loadHalfF16c(block + 2));
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4));
        const __m128i nibble = _mm_set1_epi8(15);
        rowdot::Block32 values = rowdot::widenBytes(_mm_and_si128(bytes, nibble),
                                                    _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        for (__m256& v : values.v) {
            v = _mm256_add_ps(_mm256_mul_ps(d, v), m);
        }
        return values;
    }
};

/// A block as codes q, scale d and offset m (its values d * q + m).
struct DecodeScaledAvx2 {
    KVSCOPE_AVX2 rowdot::ScaledBlock32 operator()(const uint8_t* block) const {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4));
        const __m128i nibble = _mm_set1_epi8(15);
        const rowdot::Block32 codes = rowdot::widenBytes(_mm_and_si128(bytes, nibble),
                                                         _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        return {{codes.v[0], codes.v[1], codes.v[2], codes.v[3]},
                _mm256_set1_ps(rowdot::loadHalfF16c(block)),
                _mm256_set1_ps(rowdot::loadHalfF16c(block + 2))};
    }
};
#endif

class Q4_1Block final : public SplitRowKernels<Q4_1Block> {
public:
    static constexpr size_t kValues = 32;
    static constexpr size_t kBytes = 20;
    static constexpr bool kSplitOffset = true;
#if KVSCOPE_ROWDOT_X86
    /// A block as 16-bit integer codes for the split-row kernel, with d and m.
    struct DecodeCodesAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, rowdot::Codes32* codes) const {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4));
            const __m128i nibble = _mm_set1_epi8(15);
            codes[0] = {_mm256_cvtepu8_epi16(_mm_and_si128(bytes, nibble)),
                        _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(bytes, 4), nibble)),
                        rowdot::loadHalfPair(block)};
        }
    };
#endif
    const GgmlTypeTraits& traits() const override { return *ggmlType(3); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q4_1_ref: d = (max - min) / 15, m = min, q = min(15, trunc((x - min) / d + 0.5)).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 20) {
            const auto [min, max] = std::minmax_element(values, values + 32);
            const float d = (*max - *min) / 15.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            storeHalf(out + 2, *min);
            for (int j = 0; j < 16; ++j) {
                const int low = code((values[j] - *min) * id + 0.5f, 15);
                const int high = code((values[j + 16] - *min) * id + 0.5f, 15);
                out[4 + j] = static_cast<uint8_t>(low | (high << 4));
            }
        }
    }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::widenBlocks32(blocks, 20, blockCount, out, DecodeAvx2());
            return;
        }
#endif
        for (size_t b = 0; b < blockCount; ++b, blocks += 20, out += 32) {
            const float d = loadHalf(blocks);
            const float m = loadHalf(blocks + 2);
            const uint8_t* qs = blocks + 4;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>(qs[j] & 15) + m;
                out[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
            }
        }
    }
    void dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount, size_t inputStride,
                float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::dotBlocks32<true>(blocks, 20, blockCount, inputs, inputCount, inputStride, out, DecodeScaledAvx2());
            return;
        }
#endif
        BlockType::dotRow(blocks, blockCount, inputs, inputCount, inputStride, out);
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_1) {
    static const kvscope::gguf::Q4_1Block type;
    return type;
}
