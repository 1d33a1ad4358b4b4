// SPDX-License-Identifier: GPL-3.0-or-later
// F16: IEEE binary16 values, widened exactly.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class F16Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(1); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        for (size_t i = 0; i < blockCount; ++i) {
            storeHalf(out + 2 * i, values[i]);
        }
    }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        for (size_t i = 0; i < blockCount; ++i) {
            out[i] = loadHalf(blocks + 2 * i);
        }
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(F16) {
    static const kvscope::gguf::F16Block type;
    return type;
}
