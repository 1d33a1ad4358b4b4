// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::cache {

/// What one flush of a quantized layer's residual did, for the trace and the inspector.
struct QuantizationReport {
    int64_t tokensMoved = 0;          ///< full-precision tokens quantized by this flush
    int64_t quantizedTokensAfter = 0; ///< tokens in the quantized store afterwards
    double maxAbsError = 0.0;         ///< over the moved tokens, keys and values
    double meanAbsError = 0.0;
    double relativeError = 0.0; ///< ||x - dequantized|| / ||x|| over the moved tokens
};

} // namespace kvscope::cache
