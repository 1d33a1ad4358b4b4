// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Quantizer.h"

namespace kvscope::cache {

/// Half-quadratic quantization (HQQ's legacy proximal solver, which optimises the zero point only);
/// the exact spec is the oracle's reference_quantizer.py. nbits 1, 2, 3, 4 or 8; axis 1 (groups of
/// consecutive elements) or 0 (strided groups).
class HqqQuantizer : public Quantizer {
public:
    HqqQuantizer(int nbits, int64_t groupSize);

    config::QuantizerBackend backend() const override { return config::QuantizerBackend::Hqq; }
    void checkAxis(int64_t axis, const char* what) const override;
    void checkShape(const std::vector<int64_t>& shape, int64_t axis) const override;
    QuantizedTensor quantize(const at::Tensor& tensor, int64_t axis) const override;
    at::Tensor dequantize(const QuantizedTensor& quantized) const override;
    /// Never: the solver's stopping rule looks at the error over the whole tensor.
    bool isTokenLocal(int64_t, int64_t) const override { return false; }
};

} // namespace kvscope::cache
