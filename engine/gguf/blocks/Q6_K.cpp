// SPDX-License-Identifier: GPL-3.0-or-later
// Q6_K: 256 values in 16 groups of 16: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 group scales, fp16 d; y = (d * scale) * (q - 32).
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q6_KBlock final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(14); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 210, out += 256) {
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
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q6_K) {
    static const kvscope::gguf::Q6_KBlock type;
    return type;
}
