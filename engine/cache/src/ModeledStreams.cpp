// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/ModeledStreams.h"

#include <algorithm>

namespace kvscope::cache {

ModeledStreams::ModeledStreams(const TransferModel& model) : m_model(model) {}

void ModeledStreams::computeWaitsForPrefetches() { m_computeNotBefore = std::max(m_computeNotBefore, m_prefetchFree); }

ModeledStreams::Span ModeledStreams::prefetch(int32_t layer, int64_t bytes) {
    // Copying back before the offload finished would read a half-written host buffer.
    const int64_t begin = std::max(m_prefetchFree, offloadEndOf(layer));
    const Span span{begin, begin + m_model.transferNs(bytes)};
    m_prefetchFree = span.endNs;
    m_transferNs += span.durationNs();
    ++m_transferCount;
    return span;
}

ModeledStreams::Span ModeledStreams::compute(int64_t measuredNs) {
    const int64_t begin = std::max(m_computeFree, m_computeNotBefore);
    m_stallNs += begin - m_computeFree;
    m_lastCompute = Span{begin, begin + std::max<int64_t>(m_model.computeNs(measuredNs), 0)};
    m_computeFree = m_lastCompute.endNs;
    m_computeNs += m_lastCompute.durationNs();
    return m_lastCompute;
}

ModeledStreams::Span ModeledStreams::offload(int32_t layer, int64_t bytes) {
    // On the compute lane, as the reference offloads on the default stream: the copy cannot start
    // before the update that produced the states.
    const Span span{m_computeFree, m_computeFree + m_model.transferNs(bytes)};
    m_computeFree = span.endNs;
    recordOffloadEnd(layer, span.endNs);
    m_transferNs += span.durationNs();
    ++m_transferCount;
    return span;
}

ModeledStreams::Span ModeledStreams::fetchOnComputeLane(int32_t layer, int64_t bytes) {
    const int64_t begin = std::max({m_computeFree, m_computeNotBefore, offloadEndOf(layer)});
    m_stallNs += begin - m_computeFree;
    const Span span{begin, begin + m_model.transferNs(bytes)};
    m_computeFree = span.endNs;
    m_transferNs += span.durationNs();
    ++m_transferCount;
    return span;
}

int64_t ModeledStreams::offloadEndOf(int32_t layer) const {
    const auto index = static_cast<size_t>(layer);
    return index < m_offloadEnd.size() ? m_offloadEnd[index] : 0;
}

void ModeledStreams::recordOffloadEnd(int32_t layer, int64_t endNs) {
    const auto index = static_cast<size_t>(layer);
    if (index >= m_offloadEnd.size()) {
        m_offloadEnd.resize(index + 1, 0);
    }
    m_offloadEnd[index] = endNs;
}

} // namespace kvscope::cache
