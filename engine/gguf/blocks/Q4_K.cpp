// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_K: 256 values in 8 sub-blocks of 32: fp16 d and dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles; y = (d * scale) * q - dmin * min.
#include "BlockTypeRegistration.h"
#include "KQuantScales.h"

namespace kvscope::gguf {
namespace {

class Q4_KBlock final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(12); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 144, out += 256) {
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
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_K) {
    static const kvscope::gguf::Q4_KBlock type;
    return type;
}
