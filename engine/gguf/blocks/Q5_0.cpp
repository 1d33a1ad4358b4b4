// SPDX-License-Identifier: GPL-3.0-or-later
// Q5_0: fp16 d, a 32-bit word of fifth bits (bit i for value i), 16 bytes of nibbles: y = d * (q - 16).
#include "BlockQuantiser.h"
#include "WidenedBlockType.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

class Q5_0Block final : public WidenedBlockType<Q5_0Block> {
public:
    static constexpr size_t kValues = 32;
    static constexpr size_t kBytes = 22;
    const GgmlTypeTraits& traits() const override { return *ggmlType(6); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q5_0_ref: d = (the value of largest magnitude) / -16, q = min(31, trunc(x / d + 16.5)).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 22) {
            const float max = signedExtreme(values);
            const float d = max / -16.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            uint32_t qh = 0;
            for (int j = 0; j < 16; ++j) {
                const int low = code(values[j] * id + 16.5f, 31);
                const int high = code(values[j + 16] * id + 16.5f, 31);
                out[6 + j] = static_cast<uint8_t>((low & 15) | ((high & 15) << 4));
                qh |= static_cast<uint32_t>((low >> 4) & 1) << j;
                qh |= static_cast<uint32_t>((high >> 4) & 1) << (j + 16);
            }
            storeU32(out + 2, qh);
        }
    }
    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        for (size_t b = 0; b < blockCount; ++b, blocks += 22, out += 32) {
            const float d = loadHalf(blocks);
            const uint32_t qh = loadU32(blocks + 2);
            const uint8_t* qs = blocks + 6;
            for (int j = 0; j < 16; ++j) {
                const int low = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
                const int high = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
                out[j] = d * static_cast<float>(low - 16);
                out[j + 16] = d * static_cast<float>(high - 16);
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    static constexpr bool kSplitOffset = false;
    /// A block as 16-bit integer codes q - 16 and d, for the split-row kernel.
    struct DecodeCodesAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, rowdot::Codes32* codes) const {
            const __m256i fifth = _mm256_and_si256(rowdot::bitsToBytes(loadU32(block + 2)), _mm256_set1_epi8(16));
            const __m256i q = _mm256_sub_epi8(_mm256_or_si256(rowdot::nibblesLowThenHigh(block + 6), fifth),
                                              _mm256_set1_epi8(16));
            codes[0] = {_mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)),
                        _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)), rowdot::loadHalfPair(block)};
        }
    };
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const __m256i fifth = _mm256_and_si256(rowdot::bitsToBytes(loadU32(block + 2)), _mm256_set1_epi8(16));
            const __m256i codes = _mm256_or_si256(rowdot::nibblesLowThenHigh(block + 6), fifth);
            const rowdot::Block32 q = rowdot::widenSigned32(_mm256_sub_epi8(codes, _mm256_set1_epi8(16)));
            const float d = rowdot::loadHalfF16c(block);
            for (int v = 0; v < 4; ++v) {
                rowdot::storeScaled(out + 8 * v, q.v[v], d);
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q5_0) {
    static const kvscope::gguf::Q5_0Block type;
    return type;
}
