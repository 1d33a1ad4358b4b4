// SPDX-License-Identifier: GPL-3.0-or-later
#include "CudaStreamOffloadScheduler.h"

#include "CacheTracer.h"
#include "kvscope/cache/CacheLayer.h"
#include "kvscope/trace/EventEmitter.h"

namespace kvscope::cache {

void CudaStreamOffloadScheduler::bringIn(std::size_t index) {
    if (m_state.tracing() != nullptr) {
        emit(m_streams.takeFinished());
    }
    m_streams.computeWaitsForPrefetches();
    if (const std::optional<std::size_t> target = m_state.prefetchDuring(index)) {
        fetch(*target, /*onPrefetchStream=*/true);
    }
    if (m_state.isOnHost(index)) {
        // Out-of-order updates only: the update waits for a copy on its own stream.
        fetch(index, /*onPrefetchStream=*/false);
    }
}

std::optional<DeviceStreams::Issue> CudaStreamOffloadScheduler::issue(std::size_t index,
                                                                      trace::TransferDirection direction,
                                                                      trace::TransferLane lane, bool moves) {
    CacheTracer* tracer = m_state.tracing();
    if (tracer == nullptr || !moves) {
        return std::nullopt;
    }
    const CacheLayer& layer = *m_state.layers[index];
    const bool toHost = direction == trace::TransferDirection::Offload;
    return DeviceStreams::Issue{static_cast<int32_t>(index), m_state.emitter.step(), direction, lane,
                                CacheTracer::transferBytes(layer), tracer->accountForLater(index, layer, toHost)};
}

void CudaStreamOffloadScheduler::fetch(std::size_t index, bool onPrefetchStream) {
    CacheLayer& layer = *m_state.layers[index];
    const bool moves = m_state.onHost[index];
    m_state.onHost[index] = false;
    if (onPrefetchStream) {
        m_streams.prefetch(layer, static_cast<int32_t>(index), moves,
                           issue(index, trace::TransferDirection::Prefetch, trace::TransferLane::Prefetch, moves));
    } else {
        m_streams.fetchOnComputeStream(
            layer, issue(index, trace::TransferDirection::Prefetch, trace::TransferLane::Compute, moves));
    }
}

KeyValueStates CudaStreamOffloadScheduler::compute(std::size_t index, const std::function<KeyValueStates()>& update) {
    // On the device the update's span comes from events around it on the compute stream.
    std::optional<DeviceStreams::Issue> timed;
    if (m_state.tracing() != nullptr) {
        timed.emplace();
        timed->layer = static_cast<int32_t>(index);
        timed->step = m_state.emitter.step();
        timed->compute = true;
    }
    KeyValueStates states;
    m_streams.compute(timed, [&] { states = update(); });
    if (timed) {
        // This layer's earlier copies must reach the sink before its Update, or a replay would apply
        // them in the wrong order.
        emit(m_streams.takeThrough(static_cast<int32_t>(index)));
    }
    return states;
}

TakeOut CudaStreamOffloadScheduler::takeOut(std::size_t index) {
    if (!m_state.offloadsAfterUpdate(index)) {
        return TakeOut::Stayed;
    }
    std::optional<DeviceStreams::Issue> timed =
        issue(index, trace::TransferDirection::Offload, trace::TransferLane::Compute, true);
    m_state.onHost[index] = true;
    m_streams.offload(*m_state.layers[index], static_cast<int32_t>(index), timed);
    // A timed copy carries the layer's Memory event with it, emitted when the copy has finished.
    return timed ? TakeOut::OffloadPending : TakeOut::Offloaded;
}

void CudaStreamOffloadScheduler::emit(const std::vector<DeviceStreams::Completed>& completed) {
    if (completed.empty()) {
        return;
    }
    // Each finished copy or update is stamped with the step that issued it, not the one that saw it.
    const int64_t step = m_state.emitter.step();
    for (const DeviceStreams::Completed& done : completed) {
        m_state.emitter.setStep(done.issue.step);
        if (done.issue.compute) {
            m_state.emitter.emit(done.issue.layer, trace::ComputeEvent{trace::TimingSource::Measured,
                                                                       done.transfer.beginNs, done.transfer.endNs});
        } else {
            m_state.emitter.emit(done.issue.layer, done.transfer);
            m_state.emitter.emit(done.issue.layer, done.issue.memoryAfter);
        }
    }
    m_state.emitter.setStep(step);
}

} // namespace kvscope::cache
