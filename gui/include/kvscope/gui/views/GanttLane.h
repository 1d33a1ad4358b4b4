// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/TimelineGeometry.h"
#include "kvscope/trace/TimedSpans.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// One lane of the transfer timeline: the indices of its spans in the timeline's TimedSpans, in begin order, read
/// as boxes where they lie: an offloaded 32 x 131072 session's 12 million spans take 4 bytes each here, not a
/// 24-byte copy. The spans must outlive the lane (the session's timeline does).
class GanttLane {
public:
    /// Palette index of compute spans; transfers take their layer's (layer mod 8).
    static constexpr std::uint8_t kComputeColour = 8;

    explicit GanttLane(const trace::TimedSpans& spans) : m_spans(&spans) {}

    std::size_t size() const { return m_indices.size(); }
    bool empty() const { return m_indices.empty(); }
    TimeBox operator[](std::size_t index) const { return boxOf(m_spans->spans()[m_indices[index]]); }
    TimeBox front() const { return (*this)[0]; }
    TimeBox back() const { return (*this)[size() - 1]; }
    /// Adds the span at `index` of the spans (at the end: sortTail() puts it in place).
    void add(std::size_t index) { m_indices.push_back(static_cast<std::uint32_t>(index)); }
    void reserve(std::size_t count) { m_indices.reserve(count); }
    /// Puts the spans added from `firstNew` on in begin order among the others: emission order is not always time
    /// order (a prefetch is recorded before the update it serves). Touches only the new tail when it is in order.
    void sortTail(std::size_t firstNew) {
        const auto begins = [this](std::uint32_t a, std::uint32_t b) {
            return m_spans->spans()[a].beginNs < m_spans->spans()[b].beginNs;
        };
        const auto tail = m_indices.begin() + static_cast<std::ptrdiff_t>(std::min(firstNew, m_indices.size()));
        if (!std::is_sorted(tail == m_indices.begin() ? tail : tail - 1, m_indices.end(), begins)) {
            std::sort(tail, m_indices.end(), begins);
            std::inplace_merge(m_indices.begin(), tail, m_indices.end(), begins);
        }
    }
    /// A span as the view draws it.
    static TimeBox boxOf(const trace::TimedSpan& span) {
        return {span.beginNs, span.endNs, span.layer,
                span.lane == trace::TimedSpan::Lane::Compute ? kComputeColour
                                                             : static_cast<std::uint8_t>(std::max<int>(span.layer, 0) % 8)};
    }

private:
    const trace::TimedSpans* m_spans;
    std::vector<std::uint32_t> m_indices;
};

} // namespace kvscope::gui
