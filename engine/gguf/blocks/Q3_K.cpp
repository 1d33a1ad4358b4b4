// SPDX-License-Identifier: GPL-3.0-or-later
// Q3_K: 256 values in 16 groups of 16: 32 bytes of high bits, 64 of 2-bit codes, 12 bytes of 6-bit scales, fp16 d; y = (d * (scale - 32)) * q, q = low bits - 4 where the high bit is clear.
#include "WidenedBlockType.h"

namespace kvscope::gguf {
namespace {

/// The 16 group scales less 32: low nibbles from bytes 0-7 (the low halves first), high bit pairs from bytes
/// 8-11 (group j's pair at bits 2 * (j / 4) of byte 8 + j % 4), as gguf-py unpacks them.
void groupScales(const uint8_t* s, int scale[16]) {
    for (int j = 0; j < 16; ++j) {
        const int low = (s[j % 8] >> (4 * (j / 8))) & 15;
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale[j] = (low | (high << 4)) - 32;
    }
}

class Q3_KBlock final : public WidenedBlockType<Q3_KBlock> {
public:
    static constexpr size_t kValues = 256;
    static constexpr size_t kBytes = 110;
    const GgmlTypeTraits& traits() const override { return *ggmlType(11); }

    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        // Value 32i + l: low bits 2 * (i % 4) of code byte 32 * (i / 4) + l, high bit i of mask byte l.
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const uint8_t* mask = blocks;
            const uint8_t* qs = blocks + 32;
            int scale[16];
            groupScales(blocks + 96, scale);
            const float d = loadHalf(blocks + 108);
            for (int e = 0; e < 256; ++e) {
                const int i = e / 32;
                const int l = e % 32;
                const int low = (qs[32 * (i / 4) + l] >> (2 * (i % 4))) & 3;
                const int q = low - (((mask[l] >> i) & 1) != 0 ? 0 : 4);
                out[e] = (d * static_cast<float>(scale[e / 16])) * static_cast<float>(q);
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            int scale[16];
            groupScales(block + 96, scale);
            const float d = rowdot::loadHalfF16c(block + 108);
            const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
            const __m256i one = _mm256_set1_epi8(1);
            for (int i = 0; i < 8; ++i) {
                const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32 + 32 * (i / 4)));
                const __m256i low = rowdot::bitField(bytes, 2 * (i % 4), 3);
                const __m256i clear = _mm256_xor_si256(rowdot::bitField(mask, i, 1), one);
                const rowdot::Block32 q = rowdot::widenSigned32(_mm256_sub_epi8(low, _mm256_slli_epi16(clear, 2)));
                for (int v = 0; v < 4; ++v) {
                    rowdot::storeScaled(out + 32 * i + 8 * v, q.v[v], d * static_cast<float>(scale[2 * i + v / 2]));
                }
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q3_K) {
    static const kvscope::gguf::Q3_KBlock type;
    return type;
}
