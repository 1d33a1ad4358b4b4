// SPDX-License-Identifier: GPL-3.0-or-later
// F32: IEEE binary32 values, copied.
#include "BlockTypeRegistration.h"

#include <cstring>

namespace kvscope::gguf {
namespace {

class F32Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(0); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        std::memcpy(out, values, blockCount * sizeof(float));
    }
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const override {
        std::memcpy(out, blocks, blockCount * sizeof(float));
    }
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(F32) {
    static const kvscope::gguf::F32Block type;
    return type;
}
