// SPDX-License-Identifier: GPL-3.0-or-later
// Q6_K: 256 values in 16 groups of 16: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 group scales, fp16 d; y = (d * scale) * (q - 32).
#include "WidenedBlockType.h"

namespace kvscope::gguf {
namespace {

class Q6_KBlock final : public WidenedBlockType<Q6_KBlock> {
public:
    static constexpr size_t kValues = 256;
    static constexpr size_t kBytes = 210;
    const GgmlTypeTraits& traits() const override { return *ggmlType(14); }

    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const uint8_t* ql = blocks;
            const uint8_t* qh = blocks + 128;
            const int8_t* scales = reinterpret_cast<const int8_t*>(blocks + 192);
            const float d = loadHalf(blocks + 208);
            float groupScale[16];
            for (int g = 0; g < 16; ++g) {
                groupScale[g] = d * static_cast<float>(scales[g]);
            }
            for (int half = 0; half < 2; ++half) {
                for (int t = 0; t < 4; ++t) {
                    for (int l = 0; l < 32; ++l) {
                        const uint8_t low = ql[64 * half + 32 * (t % 2) + l] >> (4 * (t / 2));
                        const uint8_t high = qh[32 * half + l] >> (2 * t);
                        const int q = ((low & 15) | ((high & 3) << 4)) - 32;
                        const int e = 128 * half + 32 * t + l;
                        out[e] = groupScale[e / 16] * static_cast<float>(q);
                    }
                }
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    static constexpr bool kSplitOffset = false;
    /// A block as eight groups of 32 codes (q - 32) times their 16-value group's int8 scale, as 16-bit integers
    /// (exact: at most 32 x 128), each group scaled by d.
    struct DecodeCodesAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, rowdot::Codes32* codes) const {
            const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
            const __m128 d = rowdot::loadHalfScale(block + 208);  // the block's last two bytes
            const __m256i bias = _mm256_set1_epi8(32);
            for (int half = 0; half < 2; ++half) {
                const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * half));
                for (int t = 0; t < 4; ++t) {
                    const __m256i low =
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * half + 32 * (t % 2)));
                    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(rowdot::bitField(low, 4 * (t / 2), 15),
                                                                      _mm256_slli_epi16(rowdot::bitField(high, 2 * t, 3), 4)),
                                                      bias);
                    const int group = 8 * half + 2 * t;
                    codes[4 * half + t] = {
                        _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)),
                                           _mm256_set1_epi16(scales[group])),
                        _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)),
                                           _mm256_set1_epi16(scales[group + 1])),
                        d};
                }
            }
        }
    };
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
            const float d = rowdot::loadHalfF16c(block + 208);
            const __m256i bias = _mm256_set1_epi8(32);
            for (int half = 0; half < 2; ++half) {
                const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * half));
                for (int t = 0; t < 4; ++t) {
                    const __m256i low =
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * half + 32 * (t % 2)));
                    const __m256i codes = _mm256_or_si256(rowdot::bitField(low, 4 * (t / 2), 15),
                                                          _mm256_slli_epi16(rowdot::bitField(high, 2 * t, 3), 4));
                    const rowdot::Block32 q = rowdot::widenSigned32(_mm256_sub_epi8(codes, bias));
                    const int group = 8 * half + 2 * t;
                    float* at = out + 128 * half + 32 * t;
                    const float first = d * static_cast<float>(scales[group]);
                    const float second = d * static_cast<float>(scales[group + 1]);
                    rowdot::storeScaled(at, q.v[0], first);
                    rowdot::storeScaled(at + 8, q.v[1], first);
                    rowdot::storeScaled(at + 16, q.v[2], second);
                    rowdot::storeScaled(at + 24, q.v[3], second);
                }
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q6_K) {
    static const kvscope::gguf::Q6_KBlock type;
    return type;
}
