// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvscope::trace {

/// One busy interval on the session clock: a prefetch or offload copy, or a layer's compute span.
struct TimedSpan {
    enum class Lane : std::uint8_t { Prefetch, Offload, Compute };
    std::int64_t beginNs = 0;
    std::int64_t endNs = 0;
    std::int32_t step = 0;
    std::int16_t layer = -1;
    Lane lane = Lane::Compute;
    bool measured = false; ///< a real clock's (CUDA events), not the transfer model's
    bool operator==(const TimedSpan&) const = default;
};

/// A session's transfers and compute spans, 24 bytes each in arrival order: what the Transfers view draws
/// across a whole session. An offloaded 32-layer, 131072-step session has 12 million of them; kept as events
/// they took 3 GB.
class TimedSpans {
public:
    /// Whether the kind is one kept here (Transfer, Compute).
    static bool accepts(EventKind kind) { return kind == EventKind::Transfer || kind == EventKind::Compute; }
    /// Keeps a Transfer or Compute event's interval and returns true; any other event returns false.
    bool add(const Event& event);
    std::span<const TimedSpan> spans() const { return m_spans; }
    /// Keeps a span as it is (a stored block read back).
    void append(const TimedSpan& span) { m_spans.push_back(span); }
    std::size_t size() const { return m_spans.size(); }
    void reserve(std::size_t spans) { m_spans.reserve(spans); }
    void clear() { m_spans.clear(); }
    void shrinkToFit() { m_spans.shrink_to_fit(); }
    std::size_t memoryBytes() const { return m_spans.capacity() * sizeof(TimedSpan); }

private:
    std::vector<TimedSpan> m_spans;
};

} // namespace kvscope::trace
