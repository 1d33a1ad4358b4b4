// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModeledOffloadScheduler.h"

#include "CacheTracer.h"
#include "kvscope/cache/CacheLayer.h"
#include "kvscope/cache/ModeledStreams.h"
#include "kvscope/trace/EventEmitter.h"

#include <chrono>

namespace kvscope::cache {

void ModeledOffloadScheduler::bringIn(std::size_t index) {
    m_streams.computeWaitsForPrefetches();
    if (const std::optional<std::size_t> target = m_state.prefetchDuring(index)) {
        fetch(*target, /*onPrefetchLane=*/true);
    }
    if (m_state.isOnHost(index)) {
        // Only out-of-order updates get here: the layer's prefetch was never issued, so the update has
        // to wait for a copy on its own lane (the reference would fail on mixed devices instead).
        fetch(index, /*onPrefetchLane=*/false);
    }
}

void ModeledOffloadScheduler::fetch(std::size_t index, bool onPrefetchLane) {
    CacheLayer& layer = *m_state.layers[index];
    const bool moves = m_state.onHost[index];
    m_state.onHost[index] = false;
    const int64_t bytes = moves ? CacheTracer::transferBytes(layer) : 0;
    // The reference calls prefetch unconditionally; it moves something only for an offloaded layer.
    layer.prefetch();
    if (!moves) {
        return;
    }
    const auto layerId = static_cast<int32_t>(index);
    const ModeledStreams::Span span =
        onPrefetchLane ? m_streams.prefetch(layerId, bytes) : m_streams.fetchOnComputeLane(layerId, bytes);
    if (CacheTracer* tracer = m_state.tracing()) {
        const trace::TransferLane lane = onPrefetchLane ? trace::TransferLane::Prefetch : trace::TransferLane::Compute;
        m_state.emitter.emit(layerId, trace::TransferEvent{trace::TransferDirection::Prefetch, lane,
                                                           trace::TimingSource::Modeled, span.beginNs, span.endNs,
                                                           bytes});
        tracer->reportMemory(index, layer, false, CacheTracer::After::Prefetch);
    }
}

KeyValueStates ModeledOffloadScheduler::compute(std::size_t index, const std::function<KeyValueStates()>& update) {
    KeyValueStates states;
    if (m_streams.model().computeUsPerUpdate()) {
        states = update();
        m_streams.compute(0);
    } else {
        // The host time of the update is the modeled compute time: on CPU the update is the compute.
        const auto start = std::chrono::steady_clock::now();
        states = update();
        const auto elapsed = std::chrono::steady_clock::now() - start;
        m_streams.compute(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    }
    if (m_state.tracing() != nullptr) {
        const ModeledStreams::Span& span = m_streams.lastCompute();
        m_state.emitter.emit(static_cast<int32_t>(index),
                             trace::ComputeEvent{trace::TimingSource::Modeled, span.beginNs, span.endNs});
    }
    return states;
}

TakeOut ModeledOffloadScheduler::takeOut(std::size_t index) {
    if (!m_state.offloadsAfterUpdate(index)) {
        return TakeOut::Stayed;
    }
    CacheLayer& layer = *m_state.layers[index];
    const auto layerId = static_cast<int32_t>(index);
    const int64_t bytes = CacheTracer::transferBytes(layer);
    m_state.onHost[index] = true;
    layer.offload();
    const ModeledStreams::Span span = m_streams.offload(layerId, bytes);
    if (m_state.tracing() != nullptr) {
        m_state.emitter.emit(layerId, trace::TransferEvent{trace::TransferDirection::Offload,
                                                           trace::TransferLane::Compute, trace::TimingSource::Modeled,
                                                           span.beginNs, span.endNs, bytes});
    }
    return TakeOut::Offloaded;
}

} // namespace kvscope::cache
