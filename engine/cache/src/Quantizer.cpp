// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/Quantizer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

Quantizer::Quantizer(int nbits, int64_t groupSize) : m_nbits(nbits), m_groupSize(groupSize) {
    if (groupSize < 1) {
        throw CacheError(ErrorKind::Value, "q_group_size must be >= 1, got " + std::to_string(groupSize));
    }
}

at::Tensor Quantizer::roundTrip(const at::Tensor& tensor, int64_t axis) const {
    return dequantize(quantize(tensor, axis));
}

int64_t Quantizer::storageBytes(int64_t elements) const {
    const int64_t groups = (elements + m_groupSize - 1) / m_groupSize;
    return (elements * m_nbits + 7) / 8 + groups * 2 * static_cast<int64_t>(sizeof(float));
}

} // namespace kvscope::cache
