// SPDX-License-Identifier: GPL-3.0-or-later
// IQ4_NL: fp16 d, then 16 bytes of nibbles indexing a fixed non-linear table: y = d * table[q].
#include "IQ4Table.h"
#include "WidenedBlockType.h"

#include <cmath>

namespace kvscope::gguf {
namespace {

constexpr const int8_t* table = kIq4Table;

/// ggml's best_index_int8: the table entry nearest x (the upper one of two equally near).
int nearestEntry(float x) {
    if (x <= table[0]) {
        return 0;
    }
    if (x >= table[15]) {
        return 15;
    }
    int low = 0;
    int high = 15;
    while (high - low > 1) {
        const int middle = (low + high) / 2;
        if (x < table[middle]) {
            high = middle;
        } else {
            low = middle;
        }
    }
    return x - table[high - 1] < table[high] - x ? high - 1 : high;
}

class IQ4_NLBlock final : public WidenedBlockType<IQ4_NLBlock> {
public:
    static constexpr size_t kValues = 32;
    static constexpr size_t kBytes = 18;
    const GgmlTypeTraits& traits() const override { return *ggmlType(20); }
    bool quantizes() const override { return true; }
    void quantize(const float* values, size_t blockCount, uint8_t* out) const override {
        // quantize_row_iq4_nl_ref (quantize_row_iq4_nl_impl with no importance weights and ntry -1): codes for
        // d0 = max / -127 (max: the value of largest magnitude), then d the least-squares scale of those codes
        // weighted by x^2. A block of zeros keeps the previous block's codes (ggml's codes array is reused).
        uint8_t codes[32] = {};
        for (size_t b = 0; b < blockCount; ++b, values += 32, out += 18) {
            float amax = 0.0f;
            float max = 0.0f;
            for (int j = 0; j < 32; ++j) {
                const float ax = std::fabs(values[j]);
                if (ax > amax) {
                    amax = ax;
                    max = values[j];
                }
            }
            float d = 0.0f;
            if (!(amax < 1e-15f)) {
                const float id = 1.0f / (max / static_cast<float>(table[0]));
                float sumqx = 0.0f;
                float sumq2 = 0.0f;
                for (int j = 0; j < 32; ++j) {
                    const int l = nearestEntry(id * values[j]);
                    codes[j] = static_cast<uint8_t>(l);
                    const float q = table[l];
                    const float w = values[j] * values[j];
                    sumqx += w * q * values[j];
                    sumq2 += w * q * q;
                }
                d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
            }
            storeHalf(out, d);
            for (int j = 0; j < 16; ++j) {
                out[2 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
            }
        }
    }
    void widenPortable(const uint8_t* blocks, size_t blockCount, float* out) const {
        for (size_t b = 0; b < blockCount; ++b, blocks += kBytes, out += kValues) {
            const float d = loadHalf(blocks);
            const uint8_t* qs = blocks + 2;
            for (int j = 0; j < 16; ++j) {
                out[j] = d * static_cast<float>(table[qs[j] & 15]);
                out[j + 16] = d * static_cast<float>(table[qs[j] >> 4]);
            }
        }
    }

#if KVSCOPE_ROWDOT_X86
    struct WidenAvx2 {
        KVSCOPE_AVX2 void operator()(const uint8_t* block, float* out) const {
            const rowdot::Block32 q = rowdot::widenSigned32(iq4Lookup(rowdot::nibblesLowThenHigh(block + 2)));
            const float d = rowdot::loadHalfF16c(block);
            for (int v = 0; v < 4; ++v) {
                rowdot::storeScaled(out + 8 * v, q.v[v], d);
            }
        }
    };
#endif
};

} // namespace
} // namespace kvscope::gguf

KVSCOPE_BLOCK_TYPE_INSTANCE(IQ4_NL) {
    static const kvscope::gguf::IQ4_NLBlock type;
    return type;
}
