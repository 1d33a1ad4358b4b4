// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_0: fp16 d, then 16 bytes of nibbles (low: values 0-15, high: 16-31): y = d * (q - 8).
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q4_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(2); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 18, out += 32) {
            const float d = loadHalf(blocks);
            const uint8_t* qs = blocks + 2;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>((qs[j] & 15) - 8);
                out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q4_0) {
    static const kvscope::gguf::Q4_0Block type;
    return type;
}
