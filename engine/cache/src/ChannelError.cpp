// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/ChannelError.h"

#include <cmath>

namespace kvscope::cache {

void ChannelError::reset(int64_t heads, int64_t dim) {
    m_heads = heads;
    m_dim = dim;
    m_tokens = 0;
    m_squaredError.assign(static_cast<size_t>(heads * dim), 0.0);
    m_squaredValue.assign(static_cast<size_t>(heads * dim), 0.0);
}

std::vector<float> ChannelError::rootMean(const std::vector<double>& sums) const {
    if (m_tokens == 0) {
        return {};
    }
    std::vector<float> result(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) {
        result[i] = static_cast<float>(std::sqrt(sums[i] / static_cast<double>(m_tokens)));
    }
    return result;
}

std::vector<float> ChannelError::rmsError() const { return rootMean(m_squaredError); }
std::vector<float> ChannelError::rmsValue() const { return rootMean(m_squaredValue); }

} // namespace kvscope::cache
