#include "kvscope/cache/MinMaxQuantizer.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

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

MinMaxQuantizer::MinMaxQuantizer(int nbits, int64_t groupSize) : Quantizer(nbits, groupSize) {
    if (nbits != 2 && nbits != 4 && nbits != 8) {
        throw CacheError(ErrorKind::Value,
                         "`nbits` for the min-max backend has to be one of [`2`, `4`, `8`] but got " + std::to_string(nbits));
    }
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
    at::Tensor grouped = quantized.codes.to(quantized.dtype) * quantized.scale + quantized.offset;
    if (quantized.axis == 0) {
        return grouped.reshape(quantized.shape);
    }
    const int64_t axisDim = quantized.shape.back();
    const int64_t groupSize = grouped.size(0);
    const int64_t axisGroups = grouped.numel() / axisDim / groupSize;
    return grouped.reshape({groupSize, axisDim, axisGroups}).permute({2, 0, 1}).reshape(quantized.shape);
}

bool MinMaxQuantizer::isTokenLocal(int64_t axis, int64_t headDim) const {
    return axis == 0 && headDim % m_groupSize == 0;
}

} // namespace kvscope::cache
