// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/SeriesField.h"
#include "kvscope/trace/StepState.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::trace {

/// The values charts plot, one per step, kept in compact columns so that a file-backed Timeline answers
/// seriesOf without decoding its frames: the cache-wide fields (memory tiers, wall time) as i64, and per
/// layer the token fields (seq length, stored, kv length, residual, quantized) as i32, a layer's column
/// allocated at its first non-zero value (zeros before it are implied). Per-layer byte fields are not
/// kept: a Timeline folds frames for them.
class SeriesColumns {
public:
    /// Appends `state` as step `size()`; steps arrive densely and in order.
    void record(const StepState& state);
    /// Appends `count` steps given as whole columns (a stored block of them read back), laid out as record() lays
    /// them out state by state: `cacheWide[c]` and every non-empty `tokens[field][layer]` hold `count` values (an
    /// empty token column: zero at each of those steps).
    void append(std::size_t count, const std::array<std::vector<std::int64_t>, 4>& cacheWide,
                const std::array<std::vector<std::vector<std::int32_t>>, 5>& tokens);
    std::int64_t size() const { return m_steps; }
    /// Gives back what growing the columns reserved (once every step is recorded).
    void shrinkToFit();

    /// field's values at steps [fromStep, toStep] (within size()) for `layer` (-1: the cache-wide
    /// value, or the sum over layers, as seriesValue says); nullopt when the columns do not hold it.
    std::optional<std::vector<double>> values(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                              std::int64_t toStep) const;
    std::size_t memoryBytes() const;

private:
    static constexpr std::size_t kTokenFields = 5;
    static std::optional<std::size_t> tokenIndex(SeriesField field);

    std::int64_t m_steps = 0;
    std::array<std::vector<std::int64_t>, 4>
        m_cacheWide; ///< device full precision, device quantized, host, wall
    /// [field][layer]: empty until the layer's first non-zero value of that field
    std::array<std::vector<std::vector<std::int32_t>>, kTokenFields> m_tokens;
    bool m_tokensExact = true; ///< false once a value did not fit in i32: token fields then fold frames
};

} // namespace kvscope::trace
