// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/SplitActivation.h"

#include "kvscope/gguf/GgufError.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gguf {

bool SplitActivation::split(const float* values, size_t rows, size_t width, size_t stride) {
    if (width % 32 != 0) {
        throw GgufError("activation rows of " + std::to_string(width) + " values are not whole blocks of 32");
    }
    m_high.resize(rows * width);
    m_low.resize(rows * width);
    m_sums.resize(rows * width / 32);
    m_rows.resize(rows);
    for (size_t r = 0; r < rows; ++r) {
        const float* x = values + r * stride;
        float largest = 0.0f;
        for (size_t i = 0; i < width; ++i) {
            if (!std::isfinite(x[i])) {
                return false;
            }
            largest = std::max(largest, std::fabs(x[i]));
        }
        // x = s * high + t * low: high takes the value to within s / 2, low what is left (|low| <= 16384 + 1), in
        // double so that the remainder is exact.
        // s is a float (and t = s / 2^15 too), so that the kernels scale by exactly the s the split used.
        const double s = largest > 0.0f ? static_cast<double>(largest / 32767.0f) : 1.0;
        const double t = s / 32768.0;
        int16_t* high = m_high.data() + r * width;
        int16_t* low = m_low.data() + r * width;
        float* sums = m_sums.data() + r * width / 32;
        for (size_t b = 0; b < width / 32; ++b) {
            double sum = 0.0;
            for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
                const double value = x[i];
                const double h = std::clamp(std::nearbyint(value / s), -32767.0, 32767.0);
                const double l = std::clamp(std::nearbyint((value - h * s) / t), -32767.0, 32767.0);
                high[i] = static_cast<int16_t>(h);
                low[i] = static_cast<int16_t>(l);
                sum += value;
            }
            sums[b] = static_cast<float>(sum);
        }
        m_rows[r] = SplitRow{high, low, sums, static_cast<float>(s), static_cast<float>(t)};
    }
    return true;
}

} // namespace kvscope::gguf
