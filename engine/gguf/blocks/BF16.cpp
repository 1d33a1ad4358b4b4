// SPDX-License-Identifier: GPL-3.0-or-later
// BF16: the top 16 bits of a binary32.
#include "BlockTypeRegistration.h"

namespace kvscope::gguf {
namespace {

class BF16Block final : public BlockType {
public:
    const GgmlTypeTraits& traits() const override { return *ggmlType(30); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // ggml_compute_fp32_to_bf16: NaNs made quiet, then round to nearest even.
        for (size_t i = 0; i < blockCount; ++i) {
            uint32_t bits = std::bit_cast<uint32_t>(values[i]);
            uint16_t h;
            if ((bits & 0x7fffffffu) > 0x7f800000u) {
                h = static_cast<uint16_t>((bits >> 16) | 64);
            } else {
                h = static_cast<uint16_t>((static_cast<uint64_t>(bits) + (0x7fffu + ((bits >> 16) & 1u))) >> 16);
            }
            out[2 * i] = static_cast<uint8_t>(h & 0xff);
            out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        }
    }
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
