// SPDX-License-Identifier: GPL-3.0-or-later
// Q5_1: fp16 d and m, a 32-bit word of fifth bits, 16 bytes of nibbles: y = d * q + m.
#include "BlockQuantiser.h"
#include "WidenedBlockType.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

class Q5_1Block final : public WidenedBlockType<Q5_1Block> {
public:
    static constexpr size_t kValues = 32;
    static constexpr size_t kBytes = 24;
    const GgmlTypeTraits& traits() const override { return *ggmlType(7); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q5_1_ref: d = (max - min) / 31, m = min, q = trunc((x - min) / d + 0.5) (at most 31).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 24) {
            const auto [min, max] = std::minmax_element(values, values + 32);
            const float d = (*max - *min) / 31.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            storeHalf(out + 2, *min);
            uint32_t qh = 0;
            for (int j = 0; j < 16; ++j) {
                const int low = code((values[j] - *min) * id + 0.5f, 31);
                const int high = code((values[j + 16] - *min) * id + 0.5f, 31);
                out[8 + j] = static_cast<uint8_t>((low & 15) | ((high & 15) << 4));
                qh |= static_cast<uint32_t>((low >> 4) & 1) << j;
                qh |= static_cast<uint32_t>((high >> 4) & 1) << (j + 16);
            }
            storeU32(out + 4, qh);
        }
    }
    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        for (size_t b = 0; b < blockCount; ++b, blocks += 24, out += 32) {
            const float d = loadHalf(blocks);
            const float m = loadHalf(blocks + 2);
            const uint32_t qh = loadU32(blocks + 4);
            const uint8_t* qs = blocks + 8;
            for (int j = 0; j < 16; ++j) {
                const int low = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
                const int high = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
                out[j] = d * static_cast<float>(low) + m;
                out[j + 16] = d * static_cast<float>(high) + m;
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const __m256i fifth = _mm256_and_si256(rowdot::bitsToBytes(loadU32(block + 4)), _mm256_set1_epi8(16));
            const rowdot::Block32 q =
                rowdot::widenUnsigned32(_mm256_or_si256(rowdot::nibblesLowThenHigh(block + 8), fifth));
            const __m256 d = _mm256_set1_ps(rowdot::loadHalfF16c(block));
            const __m256 m = _mm256_set1_ps(rowdot::loadHalfF16c(block + 2));
            for (int v = 0; v < 4; ++v) {
                _mm256_storeu_ps(out + 8 * v, _mm256_add_ps(_mm256_mul_ps(d, q.v[v]), m));
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q5_1) {
    static const kvscope::gguf::Q5_1Block type;
    return type;
}
