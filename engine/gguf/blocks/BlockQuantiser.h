// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kvscope::gguf {

/// The value of largest magnitude in a block of 32, with its sign (the first of equals), as ggml's Q4_0/Q5_0
/// reference quantisers pick it.
inline float signedExtreme(const float* values) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < 32; ++i) {
        if (amax < std::fabs(values[i])) {
            amax = std::fabs(values[i]);
            max = values[i];
        }
    }
    return max;
}

/// A code from its biased value: truncated toward zero, kept in [0, top] (ggml's MIN and gguf-py's clip).
inline int code(float biased, int top) {
    const float truncated = std::trunc(biased);
    if (!(truncated > 0.0f)) {
        return 0;
    }
    return truncated >= static_cast<float>(top) ? top : static_cast<int>(truncated);
}

/// Q8_0's code: rounded half away from zero (roundf); a value that is no number (from an infinite block) is 0.
inline int roundedCode(float scaled) {
    if (!(std::fabs(scaled) <= 127.0f)) {
        return std::isnan(scaled) ? 0 : (scaled > 0 ? 127 : -127);
    }
    return static_cast<int>(std::round(scaled));
}

inline void storeU32(uint8_t* p, uint32_t value) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<uint8_t>(value >> (8 * i));
    }
}

} // namespace kvscope::gguf
