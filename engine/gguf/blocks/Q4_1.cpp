// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_1: fp16 d and m, then 16 bytes of nibbles: y = d * q + m.
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

class Q4_1Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(3); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q4_1_ref: d = (max - min) / 15, m = min, q = min(15, trunc((x - min) / d + 0.5)).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 20) {
            const auto [min, max] = std::minmax_element(values, values + 32);
            const float d = (*max - *min) / 15.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            storeHalf(out + 2, *min);
            for (int j = 0; j < 16; ++j) {
                const int low = code((values[j] - *min) * id + 0.5f, 15);
                const int high = code((values[j + 16] - *min) * id + 0.5f, 15);
                out[4 + j] = static_cast<uint8_t>(low | (high << 4));
            }
        }
    }
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
