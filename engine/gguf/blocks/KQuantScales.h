// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::gguf {

/// The 6-bit scales and mins of Q4_K and Q5_K's eight sub-blocks, packed in 12 bytes (ggml's
/// get_scale_min_k4).
inline void unpackKQuantScales(const uint8_t* s, uint8_t scale[8], uint8_t min[8]) {
    for (int j = 0; j < 4; ++j) {
        scale[j] = s[j] & 63;
        min[j] = s[j + 4] & 63;
        scale[j + 4] = static_cast<uint8_t>((s[j + 8] & 15) | ((s[j] >> 6) << 4));
        min[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

} // namespace kvscope::gguf
