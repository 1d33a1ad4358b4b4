// SPDX-License-Identifier: GPL-3.0-or-later
// IQ4_XS: 256 values in 8 sub-blocks of 32: fp16 d, 6-bit sub-block scales (high bit pairs in a 16-bit word, low nibbles in 4 bytes), 128 bytes of nibbles indexing IQ4_NL's table; y = (d * (scale - 32)) * table[q].
#include "IQ4Table.h"
#include "WidenedBlockType.h"

namespace kvscope::gguf {
namespace {

/// The 8 sub-block scales less 32.
void subBlockScales(const uint8_t* block, int scale[8]) {
    const unsigned high = block[2] | (block[3] << 8);
    for (int j = 0; j < 8; ++j) {
        const int low = (block[4 + j / 2] >> (4 * (j % 2))) & 15;
        scale[j] = (low | (((high >> (2 * j)) & 3) << 4)) - 32;
    }
}

class IQ4_XSBlock final : public WidenedBlockType<IQ4_XSBlock> {
public:
    static constexpr size_t kValues = 256;
    static constexpr size_t kBytes = 136;
    const GgmlTypeTraits& traits() const override { return *ggmlType(23); }

    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        // Sub-block j: the low nibbles of bytes 16j .. 16j + 15, then their high nibbles.
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const float d = loadHalf(blocks);
            int scale[8];
            subBlockScales(blocks, scale);
            const uint8_t* qs = blocks + 8;
            for (int j = 0; j < 8; ++j) {
                const float dl = d * static_cast<float>(scale[j]);
                for (int l = 0; l < 16; ++l) {
                    out[32 * j + l] = dl * static_cast<float>(kIq4Table[qs[16 * j + l] & 15]);
                    out[32 * j + l + 16] = dl * static_cast<float>(kIq4Table[qs[16 * j + l] >> 4]);
                }
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const float d = rowdot::loadHalfF16c(block);
            int scale[8];
            subBlockScales(block, scale);
            for (int j = 0; j < 8; ++j) {
                const rowdot::Block32 q = rowdot::widenSigned32(iq4Lookup(rowdot::nibblesLowThenHigh(block + 8 + 16 * j)));
                const float dl = d * static_cast<float>(scale[j]);
                for (int v = 0; v < 4; ++v) {
                    rowdot::storeScaled(out + 32 * j + 8 * v, q.v[v], dl);
                }
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(IQ4_XS) {
    static const kvscope::gguf::IQ4_XSBlock type;
    return type;
}
