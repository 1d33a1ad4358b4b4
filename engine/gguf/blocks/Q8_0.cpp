// SPDX-License-Identifier: GPL-3.0-or-later
// Q8_0: 32 int8 values and one fp16 scale d (34 bytes): y = d * q.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class Q8_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(8); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t b = 0; b < blockCount; ++b, blocks += 34, out += 32) {
            const float d = loadHalf(blocks);
            for (int i = 0; i < 32; ++i) {
                out[i] = d * static_cast<float>(static_cast<int8_t>(blocks[2 + i]));
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(Q8_0) {
    static const kvscope::gguf::Q8_0Block type;
    return type;
}
