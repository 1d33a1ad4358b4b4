// SPDX-License-Identifier: GPL-3.0-or-later
// IQ4_NL: fp16 d, then 16 bytes of nibbles indexing a fixed non-linear table: y = d * table[q].
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class IQ4_NLBlock final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(20); }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        static constexpr int8_t table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
        for (size_t b = 0; b < blockCount; ++b, blocks += 18, out += 32) {
            const float d = loadHalf(blocks);
            const uint8_t* qs = blocks + 2;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>(table[qs[j] & 15]);
                out[j + 16] = d * static_cast<float>(table[qs[j] >> 4]);
            }
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(IQ4_NL) {
    static const kvscope::gguf::IQ4_NLBlock type;
    return type;
}
