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

void ChannelError::add(const float* given, const float* reconstructed, int64_t batch, int64_t tokens) {
    const int64_t channels = m_heads * m_dim;
    for (int64_t row = 0; row < batch; ++row) {
        for (int64_t head = 0; head < m_heads; ++head) {
            double* error = m_squaredError.data() + head * m_dim;
            double* value = m_squaredValue.data() + head * m_dim;
            for (int64_t token = 0; token < tokens; ++token) {
                const int64_t offset = ((row * m_heads + head) * tokens + token) * m_dim;
                for (int64_t channel = 0; channel < m_dim; ++channel) {
                    const double x = given[offset + channel];
                    const double difference = x - static_cast<double>(reconstructed[offset + channel]);
                    error[channel] += difference * difference;
                    value[channel] += x * x;
                }
            }
        }
    }
    m_tokens += channels > 0 ? batch * tokens : 0;
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
