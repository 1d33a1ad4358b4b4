// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <vector>

namespace kvscope::cache {

/// A quantising layer's error per KV head and channel, summed over every value it has quantised since it was
/// initialised: the squared error of what attention reads against what the model gave, and the squared value
/// given (the channel's size, so that outlier channels show), for the channel error view. Batch rows count
/// together.
class ChannelError {
public:
    /// Forgets the sums and sizes them for `heads` x `dim` channels.
    void reset(int64_t heads, int64_t dim);
    /// Adds one value of channel `channel` (head x dim + its index in the head) and what came back for it.
    void add(int64_t channel, double given, double reconstructed) {
        const double difference = given - reconstructed;
        m_squaredError[static_cast<size_t>(channel)] += difference * difference;
        m_squaredValue[static_cast<size_t>(channel)] += given * given;
    }
    /// Counts `rows` token rows (batch rows x tokens) whose values add() took.
    void countTokens(int64_t rows) { m_tokens += rows; }

    int64_t heads() const { return m_heads; }
    int64_t dim() const { return m_dim; }
    /// Token rows added (batch rows x tokens).
    int64_t tokens() const { return m_tokens; }
    /// Root mean squared error per channel, head after head (heads x dim); empty before any token.
    std::vector<float> rmsError() const;
    /// Root mean square of the given values per channel, in the same order.
    std::vector<float> rmsValue() const;

private:
    std::vector<float> rootMean(const std::vector<double>& sums) const;

    int64_t m_heads = 0;
    int64_t m_dim = 0;
    int64_t m_tokens = 0;
    std::vector<double> m_squaredError;
    std::vector<double> m_squaredValue;
};

} // namespace kvscope::cache
