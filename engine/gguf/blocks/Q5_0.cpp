// SPDX-License-Identifier: GPL-3.0-or-later
// Q5_0: fp16 d, a 32-bit word of fifth bits (bit i for value i), 16 bytes of nibbles: y = d * (q - 16).
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q5_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(6); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 22, out += 32) {
            const float d = loadHalf(blocks);
            const uint32_t qh = loadU32(blocks + 2);
            const uint8_t* qs = blocks + 6;
            for (int j = 0; j < 16; ++j) {
                const int low = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
                const int high = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
                out[j] = d * static_cast<float>(low - 16);
                out[j + 16] = d * static_cast<float>(high - 16);
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q5_0) {
    static const kvscope::gguf::Q5_0Block type;
    return type;
}
