// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/MinMaxQuantizer.h"

#include "kvscope/cache/CacheError.h"

#if KVSCOPE_FUSED_CUDA_KERNELS
#include "FusedMinMax.h"
#endif

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace kvscope::cache {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string text = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + ")";
}

int64_t elementCount(const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t size : shape) {
        count *= size;
    }
    return count;
}

} // namespace

MinMaxQuantizer::MinMaxQuantizer(int nbits, int64_t groupSize, Kernels kernels)
    : Quantizer(nbits, groupSize), m_kernels(kernels) {
    if (nbits != 2 && nbits != 4 && nbits != 8) {
        throw CacheError(ErrorKind::Value,
                         "`nbits` for the min-max backend has to be one of [`2`, `4`, `8`] but got " + std::to_string(nbits));
    }
}

bool MinMaxQuantizer::fusedCudaKernels() {
#if KVSCOPE_FUSED_CUDA_KERNELS
    return true;
#else
    return false;
#endif
}

bool MinMaxQuantizer::usesCudaKernels(const at::Tensor& tensor) const {
    return fusedCudaKernels() && m_kernels == Kernels::Fused && tensor.is_cuda() && tensor.scalar_type() == at::kFloat;
}

void MinMaxQuantizer::checkAxis(int64_t axis, const char* what) const {
    if (axis != 0 && axis != -1) {
        throw CacheError(ErrorKind::Value, std::string("`") + what +
                                               "` for the min-max backend has to be one of [`0`, `-1`] but got " +
                                               std::to_string(axis));
    }
}

void MinMaxQuantizer::checkShape(const std::vector<int64_t>& shape, int64_t axis) const {
    checkAxis(axis, "axis");
    if (shape.empty()) {
        throw CacheError(ErrorKind::Value, "cannot quantize a 0-dimensional tensor");
    }
    const int64_t axisDim = axis == 0 ? shape.front() : shape.back();
    const int64_t numel = elementCount(shape);
    if (axisDim == 0) {
        throw CacheError(ErrorKind::Value, "cannot group an empty tensor of shape " + shapeText(shape));
    }
    const int64_t axisNumel = numel / axisDim;
    if (m_groupSize > axisNumel || axisNumel % m_groupSize != 0) {
        throw CacheError(ErrorKind::Value, "Group size (" + std::to_string(m_groupSize) + ") must be a divisor of (" +
                                               std::to_string(axisNumel) + "): tensor of shape " + shapeText(shape) +
                                               " grouped along axis " + std::to_string(axis));
    }
}

QuantizedTensor MinMaxQuantizer::quantize(const at::Tensor& tensor, int64_t axis) const {
    const std::vector<int64_t> shape = tensor.sizes().vec();
    checkShape(shape, axis);
#if KVSCOPE_FUSED_CUDA_KERNELS
    if (usesCudaKernels(tensor)) {
        return FusedMinMax::quantize(tensor.contiguous(), axis, m_nbits, m_groupSize);
    }
#endif
    const int64_t axisDim = axis == 0 ? shape.front() : shape.back();
    const int64_t axisGroups = tensor.numel() / axisDim / m_groupSize;
    at::Tensor grouped = axis == 0 ? tensor.reshape({-1, m_groupSize})
                                   : tensor.reshape({axisGroups, m_groupSize, axisDim})
                                         .permute({1, 2, 0})
                                         .reshape({m_groupSize, axisDim * axisGroups});
    const int64_t reduce = axis == 0 ? 1 : 0;
    const int64_t levels = (int64_t{1} << m_nbits) - 1;
    at::Tensor lo = grouped.amin(reduce, /*keepdim=*/true);
    at::Tensor hi = grouped.amax(reduce, /*keepdim=*/true);
    at::Tensor scale = ((hi - lo) / levels).clamp_min(1e-8);
    at::Tensor codes = at::clamp(at::round((grouped - lo) / scale), 0, levels).to(at::kByte);
    return {codes, scale, lo, axis, shape, tensor.scalar_type()};
}

at::Tensor MinMaxQuantizer::dequantize(const QuantizedTensor& quantized) const {
#if KVSCOPE_FUSED_CUDA_KERNELS
    if (usesCudaKernels(quantized.scale) && quantized.dtype == at::kFloat &&
        quantized.codes.scalar_type() == at::kByte) {
        return FusedMinMax::dequantize(quantized);
    }
#endif
    at::Tensor grouped = quantized.codes.to(quantized.dtype) * quantized.scale + quantized.offset;
    if (quantized.axis == 0) {
        return grouped.reshape(quantized.shape);
    }
    const int64_t axisDim = quantized.shape.back();
    const int64_t groupSize = grouped.size(0);
    const int64_t axisGroups = grouped.numel() / axisDim / groupSize;
    return grouped.reshape({groupSize, axisDim, axisGroups}).permute({2, 0, 1}).reshape(quantized.shape);
}

namespace {
constexpr float kRoundingShift = 12582912.0f; // 1.5 * 2^23
} // namespace

at::Tensor MinMaxQuantizer::roundTrip(const at::Tensor& tensor, int64_t axis) const {
#if KVSCOPE_FUSED_CUDA_KERNELS
    if (usesCudaKernels(tensor)) {
        checkShape(tensor.sizes().vec(), axis);
        return FusedMinMax::roundTrip(tensor.contiguous(), axis, m_nbits, m_groupSize);
    }
#endif
    if (m_kernels == Kernels::LibTorch || axis != 0 || !tensor.is_cpu() || tensor.scalar_type() != at::kFloat) {
        return Quantizer::roundTrip(tensor, axis);
    }
    checkShape(tensor.sizes().vec(), axis);
    const at::Tensor input = tensor.contiguous();
    const float* source = input.data_ptr<float>();
    const int64_t count = input.numel();
    for (int64_t i = 0; i < count; ++i) {
        if (!std::isfinite(source[i])) {
            // NaN and infinity propagation follows LibTorch's kernels; leave those to them.
            return Quantizer::roundTrip(tensor, axis);
        }
    }
    at::Tensor output = at::empty_like(input);
    float* target = output.data_ptr<float>();
    const auto levels = static_cast<float>((int64_t{1} << m_nbits) - 1);
    const float minimumScale = static_cast<float>(1e-8);
    for (int64_t start = 0; start < count; start += m_groupSize) {
        const float* group = source + start;
        float lo = group[0];
        float hi = group[0];
        for (int64_t i = 1; i < m_groupSize; ++i) {
            lo = std::min(lo, group[i]);
            hi = std::max(hi, group[i]);
        }
        const float scale = std::max((hi - lo) / levels, minimumScale);
        float* out = target + start;
        for (int64_t i = 0; i < m_groupSize; ++i) {
            out[i] = (group[i] - lo) / scale;
        }
        for (int64_t i = 0; i < m_groupSize; ++i) {
            // Round half to even like torch.round: adding and removing 1.5 * 2^23 leaves the float
            // rounded to an integer in the default rounding mode (exact for |x| < 2^22, and codes are
            // at most 255 here), and unlike nearbyint it vectorises.
            const float rounded = (out[i] + kRoundingShift) - kRoundingShift;
            const float code = std::min(std::max(rounded, 0.0f), levels);
            out[i] = code * scale + lo;
        }
    }
    return output;
}

bool MinMaxQuantizer::isTokenLocal(int64_t axis, int64_t headDim) const {
    return axis == 0 && headDim % m_groupSize == 0;
}

} // namespace kvscope::cache
