// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_1: fp16 d and m, then 16 bytes of nibbles: y = d * q + m.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q4_1Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(3); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 20, out += 32) {
            const float d = loadHalf(blocks);
            const float m = loadHalf(blocks + 2);
            const uint8_t* qs = blocks + 4;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>(qs[j] & 15) + m;
                out[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_1) {
    static const kvscope::gguf::Q4_1Block type;
    return type;
}
