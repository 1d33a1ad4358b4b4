// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/CacheObserver.h"
#include "kvscope/cache/KeyValueStates.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace kvscope::trace {
class EventEmitter;
}

namespace kvscope::cache {

class Cache;
class CacheLayer;
class CacheTracer;

/// What a cache shares with its offload scheduler: its policy (which layers move), the layers, where
/// each one is, the emitter and the tracer (null while no sink is attached).
struct OffloadState {
    Cache& cache;
    std::vector<std::unique_ptr<CacheLayer>>& layers;
    std::vector<bool>& onHost;
    trace::EventEmitter& emitter;
    const std::unique_ptr<CacheTracer>& tracer;

    /// The tracer while a sink is attached, else null.
    CacheTracer* tracing() const;
    bool isOnHost(std::size_t index) const { return index < onHost.size() && onHost[index]; }
    /// The layer to prefetch while `index` is updated (the reference's `prefetch(layer_idx + 1)`); when
    /// there is none, the cache notes why once (Cache::offloadNotice).
    std::optional<std::size_t> prefetchDuring(std::size_t index) const;
    /// Whether the policy offloads `index` after its update.
    bool offloadsAfterUpdate(std::size_t index) const;
};

/// Moves an offloading cache's layers between device and host around their updates (the reference's
/// `Cache.update` offload steps): bring the layer in, run the update, take it out. One implementation
/// per clock: real CUDA streams timed with device events, or the modeled streams of a CPU run. Tracing
/// of the copies happens here, since only the scheduler knows when a copy has finished.
class OffloadScheduler {
public:
    virtual ~OffloadScheduler() = default;
    /// Before updating `index`: the compute stream waits for the prefetches issued so far, the next
    /// eligible layer (OffloadState::prefetchDuring) is prefetched, and `index` itself is fetched on the
    /// compute stream if it is still on the host.
    virtual void bringIn(std::size_t index) = 0;
    /// Runs the layer's update on the compute stream, timing it.
    virtual KeyValueStates compute(std::size_t index, const std::function<KeyValueStates()>& update) = 0;
    /// Offloads the layer after its update.
    virtual TakeOut takeOut(std::size_t index) = 0;
    /// Emits the events of every copy still in flight, waiting for them (before operations on all
    /// layers and at the end of a step). Only call while tracing.
    virtual void drain() = 0;
};

} // namespace kvscope::cache
