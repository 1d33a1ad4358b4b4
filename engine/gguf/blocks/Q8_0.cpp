// SPDX-License-Identifier: GPL-3.0-or-later
// Q8_0: 32 int8 values and one fp16 scale d (34 bytes): y = d * q.
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"
#include "RowDot.h"
#include "SplitRowKernels.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

#if KVSCOPE_ROWDOT_X86
/// A block's values as dequantize() gives them (d * q, rounded once), four vectors of 8.
struct DecodeAvx2 {
    KVSCOPE_AVX2 rowdot::Block32 operator()(const uint8_t* block) const {
        const __m256 d = _mm256_set1_ps(rowdot::loadHalfF16c(block));
        rowdot::Block32 values;
        for (int k = 0; k < 4; ++k) {
            const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * k));
            values.v[k] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes)));
        }
        return values;
    }
};

/// A block as codes q and scale d (its values d * q).
struct DecodeScaledAvx2 {
    KVSCOPE_AVX2 rowdot::ScaledBlock32 operator()(const uint8_t* block) const {
        rowdot::ScaledBlock32 scaled;
        for (int k = 0; k < 4; ++k) {
            const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * k));
            scaled.codes[k] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
        }
        scaled.d = _mm256_set1_ps(rowdot::loadHalfF16c(block));
        scaled.m = _mm256_setzero_ps();
        return scaled;
    }
};
#endif

class Q8_0Block final : public SplitRowKernels<Q8_0Block> {
public:
    static constexpr size_t kValues = 32;
    static constexpr size_t kBytes = 34;
    static constexpr bool kSplitOffset = false;
#if KVSCOPE_ROWDOT_X86
    /// A block as 16-bit integer codes for the split-row kernel, with d.
    struct DecodeCodesAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, rowdot::Codes32* codes) const {
            codes[0] = {_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2))),
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18))),
                        rowdot::loadHalfPair(block)};
        }
    };
#endif
    const GgmlTypeTraits& traits() const override { return *ggmlType(8); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) half away from zero.
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 34) {
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) {
                amax = std::max(amax, std::fabs(values[i]));
            }
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            for (int i = 0; i < 32; ++i) {
                out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(roundedCode(values[i] * id)));
            }
        }
    }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::widenBlocks32(blocks, 34, blockCount, out, DecodeAvx2());
            return;
        }
#endif
        for (size_t b = 0; b < blockCount; ++b, blocks += 34, out += 32) {
            const float d = loadHalf(blocks);
            for (int i = 0; i < 32; ++i) {
                out[i] = d * static_cast<float>(static_cast<int8_t>(blocks[2 + i]));
            }
        }
    }
    void dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount, size_t inputStride,
                float* out) const override {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::dotBlocks32<false>(blocks, 34, blockCount, inputs, inputCount, inputStride, out, DecodeScaledAvx2());
            return;
        }
#endif
        BlockType::dotRow(blocks, blockCount, inputs, inputCount, inputStride, out);
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q8_0) {
    static const kvscope::gguf::Q8_0Block type;
    return type;
}
