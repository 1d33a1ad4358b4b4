// SPDX-License-Identifier: GPL-3.0-or-later
// BF16: the top 16 bits of a binary32.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class BF16Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(30); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t i = 0; i < blockCount; ++i) {
            const uint32_t bits = static_cast<uint32_t>(blocks[2 * i] | (blocks[2 * i + 1] << 8)) << 16;
            out[i] = std::bit_cast<float>(bits);
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(BF16) {
    static const kvscope::gguf::BF16Block type;
    return type;
}
