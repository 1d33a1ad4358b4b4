// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_0: fp16 d, then 16 bytes of nibbles (low: values 0-15, high: 16-31): y = d * (q - 8).
#include "BlockTypeRegistration.h"
#include "BlockQuantiser.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {
namespace {

class Q4_0Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(2); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)).
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 18) {
            const float max = signedExtreme(values);
            const float d = max / -8.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            storeHalf(out, d);
            for (int j = 0; j < 16; ++j) {
                const int low = code(values[j] * id + 8.5f, 15);
                const int high = code(values[j + 16] * id + 8.5f, 15);
                out[2 + j] = static_cast<uint8_t>(low | (high << 4));
            }
        }
    }
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
