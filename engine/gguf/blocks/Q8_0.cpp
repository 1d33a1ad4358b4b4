// SPDX-License-Identifier: GPL-3.0-or-later
// Q8_0: 32 int8 values and one fp16 scale d (34 bytes): y = d * q.
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

class Q8_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(8); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) half away from zero.
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 34) {
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) {
                amax = std::max(amax, std::fabs(values[i]));
            }
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            for (int i = 0; i < 32; ++i) {
                out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(roundedCode(values[i] * id)));
            }
        }
    }
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
