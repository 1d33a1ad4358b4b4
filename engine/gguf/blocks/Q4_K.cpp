// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_K: 256 values in 8 sub-blocks of 32: fp16 d and dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles; y = (d * scale) * q - dmin * min.
#include "KQuantScales.h"
#include "WidenedBlockType.h"

namespace kvscope::gguf {
namespace {

class Q4_KBlock final : public WidenedBlockType<Q4_KBlock> {
public:
    static constexpr size_t kValues = 256;
    static constexpr size_t kBytes = 144;
    const GgmlTypeTraits& traits() const override { return *ggmlType(12); }

    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const float d = loadHalf(blocks);
            const float dmin = loadHalf(blocks + 2);
            uint8_t scale[8];
            uint8_t min[8];
            unpackKQuantScales(blocks + 4, scale, min);
            const uint8_t* qs = blocks + 16;
            for (int k = 0; k < 8; ++k) {
                const float ds = d * static_cast<float>(scale[k]);
                const float dm = dmin * static_cast<float>(min[k]);
                for (int l = 0; l < 32; ++l) {
                    const int q = (qs[32 * (k / 2) + l] >> (4 * (k % 2))) & 15;
                    out[32 * k + l] = ds * static_cast<float>(q) - dm;
                }
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    static constexpr bool kSplitOffset = true;
    /// Calls group(k, codes, d * scale[k], dmin * min[k]) for the block's eight groups of 32 four-bit codes (32
    /// bytes, one per code), in value order: what both kernels below read.
    template <typename Group>
    KVSCOPE_AVX2 static void forEachGroup(const uint8_t* block, const Group& group) {
        const __m128 dm = rowdot::loadHalfPair(block);
        const float d = _mm_cvtss_f32(dm);
        const float dmin = _mm_cvtss_f32(_mm_movehdup_ps(dm));
        uint8_t scale[8];
        uint8_t min[8];
        unpackKQuantScales(block + 4, scale, min);
        for (int pair = 0; pair < 4; ++pair) {
            const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * pair));
            for (int half = 0; half < 2; ++half) {
                const int k = 2 * pair + half;
                group(k, rowdot::bitField(bytes, 4 * half, 15), d * static_cast<float>(scale[k]),
                      dmin * static_cast<float>(min[k]));
            }
        }
    }
    /// A block as eight groups of 16-bit integer codes, each with its d * scale and -dmin * min.
    struct DecodeCodesAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, rowdot::Codes32* codes) const {
            forEachGroup(block, [codes](int k, __m256i q, float scale, float min) KVSCOPE_AVX2 {
                codes[k] = {_mm256_cvtepu8_epi16(_mm256_castsi256_si128(q)),
                            _mm256_cvtepu8_epi16(_mm256_extracti128_si256(q, 1)), _mm_setr_ps(scale, -min, 0.0f, 0.0f)};
            });
        }
    };
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            forEachGroup(block, [out](int k, __m256i q, float scale, float min) KVSCOPE_AVX2 {
                rowdot::storeBlockScaledLess(out + 32 * k, rowdot::widenUnsigned32(q), scale, min);
            });
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_K) {
    static const kvscope::gguf::Q4_KBlock type;
    return type;
}
