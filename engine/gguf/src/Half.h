// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace kvscope::gguf {

/// IEEE binary16 -> binary32, exact (subnormals, infinities and NaNs included), as numpy's astype does.
inline float halfToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        // Subnormal: normalise the mantissa.
        exponent = 113;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --exponent;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

/// binary32 -> binary16, rounding to nearest even (numpy's astype(float16), ggml's GGML_FP32_TO_FP16 on the CPU):
/// subnormals, overflow to infinity and NaNs (kept quiet) included.
inline uint16_t floatToHalf(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint32_t sign = (bits >> 16) & 0x8000u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    }
    if (magnitude >= 0x477ff000u) { // rounds to 65520 or more: infinity
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) { // below the smallest normal half: a subnormal (or zero)
        if (magnitude < 0x33000000u) { // below half the smallest subnormal: zero
            return static_cast<uint16_t>(sign);
        }
        const uint32_t exponent = magnitude >> 23;
        const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exponent; // 14 + (113 - exponent - 1): brings the value to units of 2^-24
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u))) {
            ++half;
        }
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = ((magnitude - 0x38000000u) >> 13);
    const uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
        ++half;
    }
    return static_cast<uint16_t>(sign | half);
}

inline void storeHalf(uint8_t* p, float value) {
    const uint16_t h = floatToHalf(value);
    p[0] = static_cast<uint8_t>(h & 0xff);
    p[1] = static_cast<uint8_t>(h >> 8);
}

/// The little-endian fp16 at `p`, widened.
inline float loadHalf(const uint8_t* p) { return halfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

inline uint32_t loadU32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

} // namespace kvscope::gguf
