// SPDX-License-Identifier: GPL-3.0-or-later
#include "DeviceStreams.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/QuantizedLayer.h"

#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <cmath>
#include <concepts>
#include <thread>

namespace kvscope::cache {
namespace {

// LibTorch 1.13 has neither c10::Event::elapsedTime nor c10::Event::synchronize; 2.4+ has both. The
// helpers are templates so that the branch a LibTorch lacks is never instantiated.
template <typename E>
concept TimedEvent = requires(const E& from, const E& to) {
    { from.elapsedTime(to) } -> std::convertible_to<double>;
};
template <typename E>
concept SynchronizableEvent = requires(const E& event) { event.synchronize(); };

template <typename E> void waitFor(const E& event) {
    if constexpr (SynchronizableEvent<E>) {
        event.synchronize();
    } else {
        while (!event.query()) {
            std::this_thread::yield();
        }
    }
}

template <typename E> std::optional<double> elapsedMs(const E& from, const E& to) {
    if constexpr (TimedEvent<E>) {
        return from.elapsedTime(to);
    } else {
        return std::nullopt;
    }
}

constexpr bool kDeviceTiming = TimedEvent<c10::Event>;
// Timing costs a little per event, so only the events that are read for times ask for it.
constexpr c10::EventFlag kTimingFlag = kDeviceTiming ? c10::EventFlag::BACKEND_DEFAULT : c10::EventFlag::PYTORCH_DEFAULT;

int64_t hostNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

DeviceStreams::DeviceStreams(const c10::Device& device)
    : m_device(device),
      m_prefetchStream(c10::impl::VirtualGuardImpl(device.type()).getStreamFromGlobalPool(device)),
      m_prefetchDone(device.type()) {}

DeviceStreams::~DeviceStreams() = default;


c10::Stream DeviceStreams::computeStream() const {
    // The stream the model's work is on: the default stream unless the caller chose another.
    return c10::impl::VirtualGuardImpl(m_device.type()).getStream(m_device);
}

void DeviceStreams::computeWaitsForPrefetches() {
    m_prefetchDone.record(m_prefetchStream);
    m_prefetchDone.block(computeStream());
}

template <typename Move>
void DeviceStreams::run(const c10::Stream& stream, const std::optional<Issue>& timed, Move&& move) {
    if (!timed) {
        move();
        return;
    }
    if (!m_clockBase) {
        m_clockBase.emplace(m_device.type(), kTimingFlag);
        m_clockBase->record(stream);
        m_clockBaseHostNs = hostNowNs();
    }
    Pending pending{*timed, c10::Event(m_device.type(), kTimingFlag), c10::Event(m_device.type(), kTimingFlag),
                    hostNowNs()};
    pending.begin.record(stream);
    move();
    pending.end.record(stream);
    m_pending.push_back(std::move(pending));
}

void DeviceStreams::prefetch(CacheLayer& layer, int32_t layerIndex, bool moves, const std::optional<Issue>& timed) {
    c10::StreamGuard onSideStream(m_prefetchStream);
    if (!moves) {
        layer.prefetch(); // the reference's call; a no-op for a layer already on its device
        return;
    }
    // The host copy must be complete before it is read back: the reference does not wait for it.
    const auto index = static_cast<size_t>(layerIndex);
    if (index < m_offloadDone.size() && m_offloadDone[index]) {
        m_offloadDone[index]->block(m_prefetchStream);
    }
    run(m_prefetchStream, timed, [&layer] { layer.prefetch(); });
    recordOnComputeStream(layer);
}

void DeviceStreams::offload(CacheLayer& layer, int32_t index, const std::optional<Issue>& timed) {
    const c10::Stream stream = computeStream();
    run(stream, timed, [&layer] { layer.offload(); });
    const auto slot = static_cast<size_t>(index);
    if (slot >= m_offloadDone.size()) {
        m_offloadDone.resize(slot + 1);
    }
    if (!m_offloadDone[slot]) {
        m_offloadDone[slot].emplace(m_device.type());
    }
    m_offloadDone[slot]->record(stream);
}

void DeviceStreams::fetchOnComputeStream(CacheLayer& layer, const std::optional<Issue>& timed) {
    // Same stream as the offload, so stream order already puts it after that copy.
    run(computeStream(), timed, [&layer] { layer.prefetch(); });
}

void DeviceStreams::compute(const std::optional<Issue>& timed, const std::function<void()>& update) {
    run(computeStream(), timed, update);
}

void DeviceStreams::recordOnComputeStream(const CacheLayer& layer) {
    std::vector<at::Tensor> tensors;
    if (const auto* quantized = dynamic_cast<const QuantizedLayer*>(&layer)) {
        tensors = {quantized->keySequence().storage(), quantized->valueSequence().storage()};
    } else if (const AttentionLayer* attention = layer.asAttention()) {
        tensors = {attention->keys(), attention->values()};
    }
    if (const LinearAttentionLayer* linear = layer.asLinearAttention()) {
        tensors.push_back(linear->convStates());
        tensors.push_back(linear->recurrentStates());
    }
    const c10::impl::VirtualGuardImpl guard(m_device.type());
    const c10::Stream stream = computeStream();
    for (const at::Tensor& tensor : tensors) {
        if (tensor.defined() && tensor.device() == m_device && tensor.has_storage()) {
            guard.recordDataPtrOnStream(tensor.storage().data_ptr(), stream);
        }
    }
}

int64_t DeviceStreams::sessionNs(const c10::Event& event, int64_t hostNs) const {
    if (auto elapsed = elapsedMs(*m_clockBase, event)) {
        return std::llround(*elapsed * 1e6);
    }
    return hostNs - m_clockBaseHostNs;
}

DeviceStreams::Completed DeviceStreams::complete(Pending& pending) {
    waitFor(pending.end);
    const int64_t seenDoneNs = hostNowNs();
    Completed done{pending.issue, {}};
    done.transfer.direction = pending.issue.direction;
    done.transfer.lane = pending.issue.lane;
    done.transfer.timing = trace::TimingSource::Measured;
    done.transfer.beginNs = sessionNs(pending.begin, pending.hostBeginNs);
    done.transfer.endNs = std::max(done.transfer.beginNs, sessionNs(pending.end, seenDoneNs));
    done.transfer.bytes = pending.issue.bytes;
    return done;
}

std::vector<DeviceStreams::Completed> DeviceStreams::takeThrough(int32_t layer) {
    size_t count = 0;
    for (size_t index = 0; index < m_pending.size(); ++index) {
        const Issue& issue = m_pending[index].issue;
        if (layer < 0 || (issue.layer == layer && !issue.compute)) {
            count = index + 1;
        }
    }
    std::vector<Completed> done;
    done.reserve(count);
    for (size_t index = 0; index < count; ++index) {
        done.push_back(complete(m_pending.front()));
        m_pending.pop_front();
    }
    return done;
}

std::vector<DeviceStreams::Completed> DeviceStreams::takeFinished() {
    std::vector<Completed> done;
    while (!m_pending.empty() && m_pending.front().end.query()) {
        done.push_back(complete(m_pending.front()));
        m_pending.pop_front();
    }
    return done;
}

} // namespace kvscope::cache
