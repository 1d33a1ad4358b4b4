// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

namespace kvscope::cache {

class CacheLayer;

/// The CUDA path of offloading, written against LibTorch's device-generic streams and events so that
/// it compiles against CPU-only builds: prefetches run on a side stream after the layer's last offload,
/// the compute stream waits for the side stream before each update, offloads run on the compute
/// stream into pinned host memory (LibTorch pins the destination of a non-blocking device-to-host copy).
/// With timing asked for, each copy is bracketed by device events and kept pending until it has
/// finished; its begin/end are then read from the events (marked Measured).
class DeviceStreams {
public:
    /// What the cache knows about a copy (or a timed update) when it issues it; the times come later.
    struct Issue {
        int32_t layer = 0;
        int64_t step = 0;
        trace::TransferDirection direction = trace::TransferDirection::Offload;
        trace::TransferLane lane = trace::TransferLane::Compute;
        int64_t bytes = 0;
        trace::MemoryEvent memoryAfter; ///< the layer's tiers once the copy is done
        bool compute = false;           ///< a layer update on the compute stream, not a copy
    };
    /// A finished copy or update, ready to be emitted (an update's span is in `transfer`'s begin/end).
    struct Completed {
        Issue issue;
        trace::TransferEvent transfer;
    };

    explicit DeviceStreams(const c10::Device& device);
    ~DeviceStreams();
    DeviceStreams(const DeviceStreams&) = delete;
    DeviceStreams& operator=(const DeviceStreams&) = delete;

    const c10::Device& device() const { return m_device; }

    /// The reference's `default_stream.wait_stream(prefetch_stream)`, on the current stream.
    void computeWaitsForPrefetches();
    /// Runs the layer's prefetch with the side stream current; when it `moves` the layer back, only after
    /// the layer's last offload, and the new device storages are recorded on the compute stream.
    void prefetch(CacheLayer& layer, int32_t index, bool moves, const std::optional<Issue>& timed);
    /// Runs the layer's offload on the current (compute) stream.
    void offload(CacheLayer& layer, int32_t index, const std::optional<Issue>& timed);
    /// Brings a layer back on the compute stream (a layer updated while still offloaded).
    void fetchOnComputeStream(CacheLayer& layer, const std::optional<Issue>& timed);
    /// Runs a layer update on the compute stream; with `timed` (its `compute` set) it is bracketed by
    /// device events and queued with the copies, so that it completes in stream order.
    void compute(const std::optional<Issue>& timed, const std::function<void()>& update);

    bool hasPending() const { return !m_pending.empty(); }
    /// Pending work, oldest first, up to the last copy of `layer` (everything when `layer` < 0),
    /// waiting for each to finish; a layer's own update does not make the host wait for it.
    std::vector<Completed> takeThrough(int32_t layer);
    /// Pending copies at the front of the queue that have already finished; never waits.
    std::vector<Completed> takeFinished();

private:
    struct Pending {
        Issue issue;
        c10::Event begin;
        c10::Event end;
        int64_t hostBeginNs = 0;
    };

    c10::Stream computeStream() const;
    /// Records the event pair around `move` on `stream` (when timed) and queues the copy.
    template <typename Move> void run(const c10::Stream& stream, const std::optional<Issue>& timed, Move&& move);
    /// Tells the caching allocator that the layer's device storages are used on the compute stream, so
    /// blocks allocated by a prefetch on the side stream are not reused before the compute stream is done.
    void recordOnComputeStream(const CacheLayer& layer);
    Completed complete(Pending& pending);
    int64_t sessionNs(const c10::Event& event, int64_t hostNs) const;

    c10::Device m_device;
    c10::Stream m_prefetchStream;
    c10::Event m_prefetchDone;
    std::vector<std::optional<c10::Event>> m_offloadDone; ///< per layer: after its last offload
    std::optional<c10::Event> m_clockBase;                ///< session clock origin on the device
    int64_t m_clockBaseHostNs = 0;
    std::deque<Pending> m_pending;
};

} // namespace kvscope::cache
