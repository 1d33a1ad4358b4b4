// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SeriesDownsampler.h"

#include <algorithm>

namespace kvscope::trace {

std::vector<SeriesPoint> SeriesDownsampler::minMax(std::span<const SeriesPoint> points,
                                                   std::size_t maxPoints) {
    const std::size_t count = points.size();
    if (count <= maxPoints)
        return {points.begin(), points.end()};
    if (maxPoints == 0)
        return {};
    const auto byValue = [](const SeriesPoint& a, const SeriesPoint& b) { return a.value < b.value; };
    if (maxPoints == 1)
        return {*std::max_element(points.begin(), points.end(), byValue)};

    const std::size_t buckets = maxPoints / 2;
    std::vector<SeriesPoint> result;
    result.reserve(buckets * 2);
    for (std::size_t bucket = 0; bucket < buckets; ++bucket) {
        // Bucket bounds by integer division spread the remainder evenly; no bucket is empty
        // because count > maxPoints >= 2 * buckets.
        const auto first = points.begin() + static_cast<std::ptrdiff_t>(bucket * count / buckets);
        const auto last = points.begin() + static_cast<std::ptrdiff_t>((bucket + 1) * count / buckets);
        // First occurrences of both, so that a flat bucket yields a single point.
        const auto low = std::min_element(first, last, byValue);
        const auto high = std::max_element(first, last, byValue);
        if (low == high) {
            result.push_back(*low);
        } else if (low < high) {
            result.push_back(*low);
            result.push_back(*high);
        } else {
            result.push_back(*high);
            result.push_back(*low);
        }
    }
    return result;
}

} // namespace kvscope::trace
