// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Quantizer.h"

namespace kvscope::cache {

/// Asymmetric min-max ("affine") quantization with optimum-quanto's group layout; the exact spec is
/// the oracle's reference_quantizer.py. nbits 2, 4 or 8; axis 0 (groups of consecutive elements) or
/// -1 (per channel over consecutive rows, KIVI's key layout).
class MinMaxQuantizer : public Quantizer {
public:
    /// Which code runs the hot paths. Fused: the fused CPU round trip (float32, axis 0) and, on CUDA
    /// float32 tensors, the fused kernels of engine/cuda where this build has them (fusedCudaKernels());
    /// LibTorch: the reference's sequence of LibTorch operations everywhere. Results are identical.
    enum class Kernels { Fused, LibTorch };

    MinMaxQuantizer(int nbits, int64_t groupSize, Kernels kernels = Kernels::Fused);

    Kernels kernels() const { return m_kernels; }
    /// Whether this build runs CUDA tensors through the fused kernels (LibTorch with CUDA and nvcc found).
    static bool fusedCudaKernels();

    config::QuantizerBackend backend() const override { return config::QuantizerBackend::MinMax; }
    void checkAxis(int64_t axis, const char* what) const override;
    void checkShape(const std::vector<int64_t>& shape, int64_t axis) const override;
    QuantizedTensor quantize(const at::Tensor& tensor, int64_t axis) const override;
    at::Tensor dequantize(const QuantizedTensor& quantized) const override;
    /// On CPU float32 with axis 0, one fused pass per group that performs the same float operations
    /// in the same order as the LibTorch path (so the results are bit-identical) without its ~15
    /// tensor temporaries; on CUDA float32 the fused kernel (one launch); elsewhere the LibTorch path.
    at::Tensor roundTrip(const at::Tensor& tensor, int64_t axis) const override;
    bool isTokenLocal(int64_t axis, int64_t headDim) const override;

private:
    /// CUDA float32 tensor and fused kernels asked for and built in.
    bool usesCudaKernels(const at::Tensor& tensor) const;

    Kernels m_kernels;
};

} // namespace kvscope::cache
