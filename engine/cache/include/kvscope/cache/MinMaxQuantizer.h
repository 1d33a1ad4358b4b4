#pragma once

#include "kvscope/cache/Quantizer.h"

namespace kvscope::cache {

/// Asymmetric min-max ("affine") quantization with optimum-quanto's group layout; the exact spec is
/// the oracle's reference_quantizer.py. nbits 2, 4 or 8; axis 0 (groups of consecutive elements) or
/// -1 (per channel over consecutive rows, KIVI's key layout).
class MinMaxQuantizer : public Quantizer {
public:
    MinMaxQuantizer(int nbits, int64_t groupSize);

    std::string name() const override { return "min-max"; }
    void checkAxis(int64_t axis, const char* what) const override;
    void checkShape(const std::vector<int64_t>& shape, int64_t axis) const override;
    QuantizedTensor quantize(const at::Tensor& tensor, int64_t axis) const override;
    at::Tensor dequantize(const QuantizedTensor& quantized) const override;
    /// On CPU float32 with axis 0, one fused pass per group that performs the same float operations
    /// in the same order as the LibTorch path (so the results are bit-identical) without its ~15
    /// tensor temporaries; elsewhere the LibTorch path.
    at::Tensor roundTrip(const at::Tensor& tensor, int64_t axis) const override;
    bool isTokenLocal(int64_t axis, int64_t headDim) const override;
};

} // namespace kvscope::cache
