// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_0: fp16 d, then 16 bytes of nibbles (low: values 0-15, high: 16-31): y = d * (q - 8).
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"
#include "RowDot.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

#if KVSCOPE_ROWDOT_X86
/// A block's values as dequantize() gives them (d * (q - 8)), four vectors of 8.
struct DecodeAvx2 {
    KVSCOPE_AVX2 rowdot::Block32 operator()(const uint8_t* block) const {
        const __m256 d = _mm256_set1_ps(rowdot::loadHalfF16c(block));
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        const __m128i nibble = _mm_set1_epi8(15);
        rowdot::Block32 values = rowdot::widenBytes(_mm_and_si128(bytes, nibble),
                                                    _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        const __m256 eight = _mm256_set1_ps(8.0f);
        for (__m256& v : values.v) {
            v = _mm256_mul_ps(d, _mm256_sub_ps(v, eight));
        }
        return values;
    }
};

/// A block as codes q, scale d and offset -8d (its values d * (q - 8)).
struct DecodeScaledAvx2 {
    KVSCOPE_AVX2 rowdot::ScaledBlock32 operator()(const uint8_t* block) const {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        const __m128i nibble = _mm_set1_epi8(15);
        const rowdot::Block32 codes = rowdot::widenBytes(_mm_and_si128(bytes, nibble),
                                                         _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        const float d = rowdot::loadHalfF16c(block);
        return {{codes.v[0], codes.v[1], codes.v[2], codes.v[3]}, _mm256_set1_ps(d), _mm256_set1_ps(-8.0f * d)};
    }
};
#endif

class Q4_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(2); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 18) {
            const float max = signedExtreme(values);
            const float d = max / -8.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            for (int j = 0; j < 16; ++j) {
                const int low = code(values[j] * id + 8.5f, 15);
                const int high = code(values[j + 16] * id + 8.5f, 15);
                out[2 + j] = static_cast<uint8_t>(low | (high << 4));
            }
        }
    }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::widenBlocks32(blocks, 18, blockCount, out, DecodeAvx2());
            return;
        }
#endif
        for (size_t b = 0; b < blockCount; ++b, blocks += 18, out += 32) {
            const float d = loadHalf(blocks);
            const uint8_t* qs = blocks + 2;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>((qs[j] & 15) - 8);
                out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
            }
        }
    }
    void dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount, size_t inputStride,
                float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::dotBlocks32<true>(blocks, 18, blockCount, inputs, inputCount, inputStride, out, DecodeScaledAvx2());
            return;
        }
#endif
        BlockType::dotRow(blocks, blockCount, inputs, inputCount, inputStride, out);
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_0) {
    static const kvscope::gguf::Q4_0Block type;
    return type;
}
