// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "DeviceStreams.h"
#include "OffloadScheduler.h"

namespace kvscope::cache {

/// Offloading on a CUDA device: prefetches on a side stream, offloads and updates on the compute
/// stream, each timed with device events (Measured) and emitted once finished, in stream order.
class CudaStreamOffloadScheduler : public OffloadScheduler {
public:
    CudaStreamOffloadScheduler(OffloadState state, const c10::Device& device) : m_state(state), m_streams(device) {}

    const c10::Device& device() const { return m_streams.device(); }

    void bringIn(std::size_t index) override;
    KeyValueStates compute(std::size_t index, const std::function<KeyValueStates()>& update) override;
    TakeOut takeOut(std::size_t index) override;
    void drain() override { emit(m_streams.takeThrough(-1)); }

private:
    void fetch(std::size_t index, bool onPrefetchStream);
    /// What the cache knows of a copy when issuing it (null when not tracing).
    std::optional<DeviceStreams::Issue> issue(std::size_t index, trace::TransferDirection direction,
                                              trace::TransferLane lane, bool moves);
    /// Emits finished copies and updates, each stamped with the step that issued it.
    void emit(const std::vector<DeviceStreams::Completed>& completed);

    OffloadState m_state;
    DeviceStreams m_streams;
};

} // namespace kvscope::cache
