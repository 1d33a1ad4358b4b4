// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "OffloadScheduler.h"

namespace kvscope::cache {

class ModeledStreams;

/// Offloading on a run without a second device: the copies are plain host moves, and each copy and
/// update gets its place on the modeled compute and prefetch lanes (events marked Modeled).
class ModeledOffloadScheduler : public OffloadScheduler {
public:
    ModeledOffloadScheduler(OffloadState state, ModeledStreams& streams) : m_state(state), m_streams(streams) {}

    void bringIn(std::size_t index) override;
    KeyValueStates compute(std::size_t index, const std::function<KeyValueStates()>& update) override;
    TakeOut takeOut(std::size_t index) override;
    void drain() override {}

private:
    /// Moves an offloaded layer back on the given lane; nothing moves for a layer already on the device.
    void fetch(std::size_t index, bool onPrefetchLane);

    OffloadState m_state;
    ModeledStreams& m_streams;
};

} // namespace kvscope::cache
