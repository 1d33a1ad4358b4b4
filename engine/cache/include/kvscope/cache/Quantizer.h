// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/QuantizedTensor.h"
#include "kvscope/config/QuantizerBackend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::cache {

/// Group-wise quantization of key/value states: the interface both backends implement.
class Quantizer {
public:
    Quantizer(int nbits, int64_t groupSize);
    virtual ~Quantizer() = default;

    virtual config::QuantizerBackend backend() const = 0;
    /// Throws CacheError (ValueError) unless `axis` is one this backend supports.
    virtual void checkAxis(int64_t axis, const char* what) const = 0;
    /// Throws CacheError (ValueError) when a tensor of this shape cannot be grouped along `axis`.
    virtual void checkShape(const std::vector<int64_t>& shape, int64_t axis) const = 0;
    virtual QuantizedTensor quantize(const at::Tensor& tensor, int64_t axis) const = 0;
    virtual at::Tensor dequantize(const QuantizedTensor& quantized) const = 0;
    /// `dequantize(quantize(tensor, axis))`; backends may fuse it, with identical results.
    virtual at::Tensor roundTrip(const at::Tensor& tensor, int64_t axis) const;
    /// True when, for states `[batch, heads, tokens, headDim]` grouped along `axis`, every group lies
    /// inside one token and quantizing it depends on that group only: then quantizing a subset of
    /// tokens gives exactly the same codes as quantizing the whole tensor.
    virtual bool isTokenLocal(int64_t axis, int64_t headDim) const = 0;

    int nbits() const { return m_nbits; }
    int64_t groupSize() const { return m_groupSize; }
    /// Bytes the quantized form of `elements` values takes: codes packed at nbits, plus a float scale
    /// and offset per group.
    int64_t storageBytes(int64_t elements) const;

protected:
    int m_nbits;
    int64_t m_groupSize;
};

} // namespace kvscope::cache
