// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvscope::trace {

/// One sample of a per-step series (occupancy, bytes, ...): the value at the end of that step.
struct SeriesPoint {
    std::int64_t step = 0;
    double value = 0.0;
    bool operator==(const SeriesPoint&) const = default;
};

/// Reduces a series to a fixed point budget without losing its peaks, so that charts draw the
/// same shape at any zoom with bounded work (heaptrack's MAX_CHART_DATAPOINTS idea).
class SeriesDownsampler {
public:
    /// Splits the points into maxPoints / 2 equal buckets and keeps, in step order, the minimum
    /// and the maximum of each (one point when they coincide). Output is a subset of the input,
    /// at most maxPoints long, and always contains the global minimum and maximum.
    /// A series that already fits is returned unchanged; maxPoints == 1 keeps only the maximum.
    static std::vector<SeriesPoint> minMax(std::span<const SeriesPoint> points, std::size_t maxPoints);
};

} // namespace kvscope::trace
