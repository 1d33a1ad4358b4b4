// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/TransferModel.h"

#include <cstdint>
#include <vector>

namespace kvscope::cache {

/// The compute stream and the prefetch stream of an offloading cache, modeled for runs without a
/// second device: every transfer and layer update gets a [begin, end) on the session clock with the
/// dependencies the CUDA path has, so a CPU user sees the timeline's true shape.
///
/// Rules (the reference's `Cache.update`, with times from the TransferModel):
///  - computeWaitsForPrefetches(): the next compute span starts no earlier than the end of every
///    prefetch scheduled so far (`default_stream.wait_stream(prefetch_stream)`); since a layer's
///    prefetch is scheduled during the previous layer's update, no update begins before its prefetch ends.
///  - prefetch(): on the prefetch lane, when it is free and after the layer's last offload ended.
///  - compute() and offload(): on the compute lane, in call order.
/// The host is taken to run ahead of both lanes (as it does with asynchronous CUDA launches), so the
/// lanes never wait for it. One lane never holds two overlapping spans.
class ModeledStreams {
public:
    /// One interval on the session clock, in nanoseconds from the first modeled operation.
    struct Span {
        int64_t beginNs = 0;
        int64_t endNs = 0;
        int64_t durationNs() const { return endNs - beginNs; }
        bool operator==(const Span&) const = default;
    };

    explicit ModeledStreams(const TransferModel& model = TransferModel());

    const TransferModel& model() const { return m_model; }
    /// Applies to operations scheduled from now on; what is already scheduled keeps its times.
    void setModel(const TransferModel& model) { m_model = model; }

    void computeWaitsForPrefetches();
    Span prefetch(int32_t layer, int64_t bytes);
    /// One layer update; `measuredNs` is its wall time, replaced by the model's fixed cost if it has one.
    Span compute(int64_t measuredNs);
    Span offload(int32_t layer, int64_t bytes);
    /// A copy to the device on the compute lane, for a layer updated while still offloaded (its
    /// prefetch was never scheduled, e.g. after out-of-order updates): the update has to wait for it.
    Span fetchOnComputeLane(int32_t layer, int64_t bytes);

    const Span& lastCompute() const { return m_lastCompute; }
    /// When each lane is next free.
    int64_t computeLaneFreeNs() const { return m_computeFree; }
    int64_t prefetchLaneFreeNs() const { return m_prefetchFree; }
    /// End of everything scheduled so far on either lane.
    int64_t makespanNs() const { return m_computeFree > m_prefetchFree ? m_computeFree : m_prefetchFree; }
    /// Sums of durations: all transfers, the compute spans, and the time the compute lane sat idle
    /// waiting for prefetches.
    int64_t transferNs() const { return m_transferNs; }
    int64_t computeNs() const { return m_computeNs; }
    int64_t stallNs() const { return m_stallNs; }
    int64_t transferCount() const { return m_transferCount; }

private:
    int64_t offloadEndOf(int32_t layer) const;
    void recordOffloadEnd(int32_t layer, int64_t endNs);

    TransferModel m_model;
    int64_t m_computeFree = 0;
    int64_t m_prefetchFree = 0;
    /// The compute lane may not start before this (set by computeWaitsForPrefetches).
    int64_t m_computeNotBefore = 0;
    std::vector<int64_t> m_offloadEnd; ///< per layer: end of its last offload
    Span m_lastCompute;
    int64_t m_transferNs = 0;
    int64_t m_computeNs = 0;
    int64_t m_stallNs = 0;
    int64_t m_transferCount = 0;
};

} // namespace kvscope::cache
