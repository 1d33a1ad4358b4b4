// SPDX-License-Identifier: GPL-3.0-or-later
// Q5_1: fp16 d and m, a 32-bit word of fifth bits, 16 bytes of nibbles: y = d * q + m.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q5_1Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(7); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
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
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q5_1) {
    static const kvscope::gguf::Q5_1Block type;
    return type;
}
