// SPDX-License-Identifier: GPL-3.0-or-later
#include "BatchIndex.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::cache {
namespace {

at::Tensor asIndexVector(const at::Tensor& indices, const char* what) {
    if (!indices.defined() || indices.dim() != 1 || !at::isIntegralType(indices.scalar_type(), /*includeBool=*/false)) {
        throw CacheError(ErrorKind::Type, std::string(what) + " must be a 1-D integer tensor");
    }
    return indices.to(at::kCPU, at::kLong).contiguous();
}

} // namespace

at::Tensor checkedBeamIndex(const at::Tensor& beamIdx, int64_t batch, const at::Device& device) {
    at::Tensor index = asIndexVector(beamIdx, "beam_idx");
    const int64_t* data = index.data_ptr<int64_t>();
    for (int64_t i = 0; i < index.numel(); ++i) {
        if (data[i] < 0 || data[i] >= batch) {
            throw CacheError(ErrorKind::Index, "index out of range in self: beam index " + std::to_string(data[i]) +
                                                   " is not in [0, " + std::to_string(batch) + ")");
        }
    }
    return index.to(device);
}

at::Tensor checkedSelectIndex(const at::Tensor& indices, int64_t batch, const at::Device& device) {
    at::Tensor index = asIndexVector(indices, "indices").clone();
    int64_t* data = index.data_ptr<int64_t>();
    for (int64_t i = 0; i < index.numel(); ++i) {
        if (data[i] < -batch || data[i] >= batch) {
            throw CacheError(ErrorKind::Index, "index " + std::to_string(data[i]) +
                                                   " is out of bounds for dimension 0 with size " + std::to_string(batch) +
                                                   " (allowed: -" + std::to_string(batch) + " to " +
                                                   std::to_string(batch - 1) + ")");
        }
        if (data[i] < 0) {
            data[i] += batch;
        }
    }
    return index.to(device);
}

} // namespace kvscope::cache
