// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/HqqQuantizer.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <limits>

namespace kvscope::cache {

HqqQuantizer::HqqQuantizer(int nbits, int64_t groupSize) : Quantizer(nbits, groupSize) {
    if (nbits != 1 && nbits != 2 && nbits != 3 && nbits != 4 && nbits != 8) {
        throw CacheError(ErrorKind::Value,
                         "`nbits` for `HQQ` backend has to be one of [`1`, `2`, `3`, `4`, `8`] but got " +
                             std::to_string(nbits));
    }
}

void HqqQuantizer::checkAxis(int64_t axis, const char* what) const {
    if (axis != 0 && axis != 1) {
        throw CacheError(ErrorKind::Value, std::string("`") + what + "` for `HQQ` backend has to be one of [`0`, `1`] but got " +
                                               std::to_string(axis));
    }
}

void HqqQuantizer::checkShape(const std::vector<int64_t>& shape, int64_t axis) const {
    checkAxis(axis, "axis");
    int64_t numel = 1;
    for (int64_t size : shape) {
        numel *= size;
    }
    if (numel % m_groupSize != 0) {
        throw CacheError(ErrorKind::Value,
                         "group_size should be divisible by the total tensor dimensions: " + std::to_string(numel) +
                             " elements, group_size: " + std::to_string(m_groupSize));
    }
}

QuantizedTensor HqqQuantizer::quantize(const at::Tensor& tensor, int64_t axis) const {
    const std::vector<int64_t> shape = tensor.sizes().vec();
    checkShape(shape, axis);
    // Every expression mirrors the reference's torch expression, operand order included, so that the
    // floating-point results are identical (e.g. Python's `max_v / t` is `t.reciprocal() * max_v`).
    at::Tensor w = tensor.to(at::kFloat);
    w = axis == 1 ? w.reshape({-1, m_groupSize}) : w.reshape({m_groupSize, -1});
    at::Tensor lo = w.amin(axis, /*keepdim=*/true);
    at::Tensor hi = w.amax(axis, /*keepdim=*/true);
    const double maxValue = static_cast<double>((int64_t{1} << m_nbits) - 1);
    at::Tensor s = (hi - lo).reciprocal() * maxValue;
    s = at::where((hi - lo).abs() <= 1e-4, at::ones_like(s), s);
    s = s.clamp_max(2e4);
    at::Tensor z = -lo * s;
    double best = 1e4;
    for (int iteration = 0; iteration < 20; ++iteration) {
        at::Tensor q = at::round(w * s + z).clamp(0, maxValue);
        at::Tensor r = (q - z) / s;
        at::Tensor x = w - r;
        at::Tensor e = at::sign(x) * at::relu(x.abs() - (1.0 / 10.0) * at::pow(x.abs(), 0.7 - 1));
        z = at::mean(q - (w - e) * s, {axis}, /*keepdim=*/true);
        const double err = at::abs(w - r).mean().item<double>();
        if (err < best) {
            best = err;
        } else {
            break;
        }
    }
    at::Tensor codes = at::round(w * s + z).clamp(0, maxValue).to(at::kByte);
    return {codes, s.reciprocal(), z, axis, shape, tensor.scalar_type()};
}

at::Tensor HqqQuantizer::dequantize(const QuantizedTensor& quantized) const {
    return ((quantized.codes.to(at::kFloat) - quantized.offset) * quantized.scale)
        .reshape(quantized.shape)
        .to(quantized.dtype);
}

} // namespace kvscope::cache
