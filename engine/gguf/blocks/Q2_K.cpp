// SPDX-License-Identifier: GPL-3.0-or-later
// Q2_K: 256 values in 16 groups of 16: 16 bytes of 4-bit scale and min pairs, 64 bytes of 2-bit codes, fp16 d and dmin; y = (d * scale) * q - dmin * min.
#include "WidenedBlockType.h"

namespace kvscope::gguf {
namespace {

class Q2_KBlock final : public WidenedBlockType<Q2_KBlock> {
public:
    static constexpr size_t kValues = 256;
    static constexpr size_t kBytes = 84;
    const GgmlTypeTraits& traits() const override { return *ggmlType(10); }

    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        // Value 128c + 32s + l is bits 2s, 2s + 1 of code byte 32c + l; its group is the value's index / 16.
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const uint8_t* scales = blocks;
            const uint8_t* qs = blocks + 16;
            const float d = loadHalf(blocks + 80);
            const float dmin = loadHalf(blocks + 82);
            for (int e = 0; e < 256; ++e) {
                const int c = e / 128;
                const int s = (e / 32) % 4;
                const int q = (qs[32 * c + e % 32] >> (2 * s)) & 3;
                const float dl = d * static_cast<float>(scales[e / 16] & 15);
                const float ml = dmin * static_cast<float>(scales[e / 16] >> 4);
                out[e] = dl * static_cast<float>(q) - ml;
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const uint8_t* scales = block;
            const float d = rowdot::loadHalfF16c(block + 80);
            const float dmin = rowdot::loadHalfF16c(block + 82);
            for (int c = 0; c < 2; ++c) {
                const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * c));
                for (int s = 0; s < 4; ++s) {
                    const rowdot::Block32 q = rowdot::widenUnsigned32(rowdot::bitField(bytes, 2 * s, 3));
                    const int group = 8 * c + 2 * s;
                    float* at = out + 128 * c + 32 * s;
                    for (int v = 0; v < 4; ++v) {
                        const uint8_t scale = scales[group + v / 2];
                        rowdot::storeScaledLess(at + 8 * v, q.v[v], d * static_cast<float>(scale & 15),
                                                dmin * static_cast<float>(scale >> 4));
                    }
                }
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q2_K) {
    static const kvscope::gguf::Q2_KBlock type;
    return type;
}
