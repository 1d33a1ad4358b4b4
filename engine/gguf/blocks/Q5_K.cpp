// SPDX-License-Identifier: GPL-3.0-or-later
// Q5_K: Q4_K plus 32 bytes of fifth bits (bit k of byte l for value l of sub-block k); y = (d * scale) * q - dmin * min.
#include "BlockTypeRegistration.h"
#include "KQuantScales.h"

namespace kvscope::gguf {
namespace {

class Q5_KBlock final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(13); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 176, out += 256) {
            const float d = loadHalf(blocks);
            const float dmin = loadHalf(blocks + 2);
            uint8_t scale[8];
            uint8_t min[8];
            unpackKQuantScales(blocks + 4, scale, min);
            const uint8_t* qh = blocks + 16;
            const uint8_t* qs = blocks + 48;
            for (int k = 0; k < 8; ++k) {
                const float ds = d * static_cast<float>(scale[k]);
                const float dm = dmin * static_cast<float>(min[k]);
                for (int l = 0; l < 32; ++l) {
                    const int q = ((qs[32 * (k / 2) + l] >> (4 * (k % 2))) & 15) | (((qh[l] >> k) & 1) << 4);
                    out[32 * k + l] = ds * static_cast<float>(q) - dm;
                }
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q5_K) {
    static const kvscope::gguf::Q5_KBlock type;
    return type;
}
