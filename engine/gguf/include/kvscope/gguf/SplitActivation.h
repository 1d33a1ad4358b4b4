// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/BlockType.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::gguf {

/// Float activation rows split into two 16-bit integer halves per value (SplitRow), once per product, so that
/// BlockType::dotSplitRow multiplies a matrix's integer codes by them as integers.
class SplitActivation {
public:
    /// Splits `rows` rows of `width` values (a multiple of 32), `stride` floats apart. False, with nothing split,
    /// when a value is infinite or NaN (the float kernels then carry it through as LibTorch would). Rows equal to
    /// the last split's (q, k and v of one input) keep that split.
    bool split(const float* values, size_t rows, size_t width, size_t stride);
    /// The split rows, split()'s `rows` of them.
    const SplitRow* rows() const { return m_rows.data(); }

private:
    std::vector<int16_t> m_high;
    std::vector<int16_t> m_low;
    std::vector<float> m_sums;
    std::vector<SplitRow> m_rows;
    /// The rows the halves were split from, and how many (0: none kept).
    std::vector<float> m_source;
    size_t m_splitRows = 0;
    size_t m_width = 0;
};

} // namespace kvscope::gguf
