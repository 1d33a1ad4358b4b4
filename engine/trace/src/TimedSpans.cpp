// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/TimedSpans.h"

#include <algorithm>
#include <limits>

namespace kvscope::trace {

static_assert(sizeof(TimedSpan) == 24, "a timed span stays 24 bytes: there are millions of them");

bool TimedSpans::add(const Event& event) {
    TimedSpan span;
    if (const auto* transfer = std::get_if<TransferEvent>(&event.payload)) {
        span = {transfer->beginNs, transfer->endNs, 0, 0,
                transfer->direction == TransferDirection::Prefetch ? TimedSpan::Lane::Prefetch : TimedSpan::Lane::Offload,
                transfer->timing == TimingSource::Measured};
    } else if (const auto* compute = std::get_if<ComputeEvent>(&event.payload)) {
        span = {compute->beginNs, compute->endNs, 0, 0, TimedSpan::Lane::Compute,
                compute->timing == TimingSource::Measured};
    } else {
        return false;
    }
    // Steps and layers beyond the compact fields' range (damaged or hostile files) are clamped, not wrapped.
    span.step = static_cast<std::int32_t>(std::clamp<std::int64_t>(event.step, 0, std::numeric_limits<std::int32_t>::max()));
    span.layer = static_cast<std::int16_t>(std::clamp<std::int64_t>(event.layer, -1, std::numeric_limits<std::int16_t>::max()));
    m_spans.push_back(span);
    return true;
}

} // namespace kvscope::trace
