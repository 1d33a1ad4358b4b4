// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvscope::gui {

/// What a serving session's paged events say beyond the pool at one step (trace::PagedState): every
/// request's tokens and text, who cached each block, what each step changed, per-step metrics and each
/// request's phase per step. Built from a Timeline's events (live and replayed alike) and extended as a
/// live session grows; Qt-free.
class PagedHistory {
public:
    /// What a request did in one step (its lane in the requests view).
    enum class Phase : std::uint8_t {
        Absent,    ///< not arrived yet
        Waiting,   ///< in the waiting queue
        Prefill,   ///< computed a chunk of its prompt (or recomputed after a preemption)
        Decode,    ///< computed one token it had sampled
        Idle,      ///< running, but the step's budget ran out before it
        Preempted, ///< preempted in this step
        Finished,  ///< finished in this step or before
    };
    struct LaneCell {
        Phase phase = Phase::Absent;
        std::int64_t firstPosition = 0; ///< Prefill, Decode: the tokens computed, [first, first + count)
        std::int64_t numTokens = 0;
        bool samples = false; ///< the step produced its next token
        bool operator==(const LaneCell&) const = default;
    };
    /// A full block cached by a request: what it held.
    struct CacheRecord {
        std::uint64_t sequence = 0;
        std::int64_t step = 0;
        std::string requestId;
        std::int32_t group = 0;
        std::int32_t block = 0;
        std::uint64_t hash = 0;
        std::uint64_t parentHash = 0;
        std::int64_t tokenBegin = 0;
        std::int64_t tokenEnd = 0;
    };
    /// The blocks one step allocated, touched (prefix hits), cached, freed and evicted, in event order.
    struct StepChanges {
        std::vector<std::int32_t> allocated, touched, cached, freed, evicted;
    };
    /// Pool metrics after one step.
    struct StepMetrics {
        std::int32_t usedBlocks = 0;       ///< held by at least one request
        std::int64_t scheduledTokens = 0;  ///< computed this step
        std::int64_t queryTokens = 0;      ///< looked up in the prefix cache at this step's admissions
        std::int64_t hitTokens = 0;        ///< of which found
        std::int64_t totalQueryTokens = 0; ///< since the start
        std::int64_t totalHitTokens = 0;
        std::int32_t evictions = 0;       ///< this step
        std::int32_t preemptions = 0;     ///< this step
        std::int32_t runningRequests = 0; ///< after the step
        /// Blocks held once the step's tokens were scheduled, before finished requests freed theirs: the
        /// step's peak as the scheduler counts it (SchedulerStats::peakBlocksUsed is the most of these).
        std::int32_t scheduledBlocks = 0;
        bool operator==(const StepMetrics&) const = default;
    };
    /// A block a request released, as its BlockFreed event says.
    struct Release {
        std::int32_t block = 0;
        std::int32_t refCnt = 0; ///< after
        std::int32_t queuePosition = -1;
        std::int32_t queueLength = 0; ///< the free queue's length after it joined (when it did)
    };

    void clear();
    /// Reads the timeline's events not read yet (all of them after clear()).
    void extend(const trace::Timeline& timeline);

    bool active() const { return m_pool.has_value(); }
    const trace::PagedPoolEvent& pool() const { return *m_pool; }
    std::int64_t stepCount() const { return static_cast<std::int64_t>(m_metrics.size()); }

    /// Requests in arrival order; a request's index is its colour.
    const std::vector<std::string>& requestIds() const { return m_requestIds; }
    int requestIndex(const std::string& id) const;
    std::int64_t promptTokens(const std::string& id) const;
    /// Tokens known for a request (prompt, then outputs as they were sampled).
    std::int64_t tokenCount(const std::string& id) const;
    /// The text of a request's token, nullopt where unknown (no text recorded, or not produced yet).
    std::optional<std::string> piece(const std::string& id, std::int64_t position) const;
    /// The text of tokens [begin, end), nullopt when any is unknown.
    std::optional<std::string> text(const std::string& id, std::int64_t begin, std::int64_t end) const;

    /// The last time the block was cached before event `sequence` (any sequence past the end: the latest).
    const CacheRecord* cachedBy(std::int32_t block, std::uint64_t sequence) const;
    /// Every time a block was cached, in event order.
    const std::vector<CacheRecord>& cacheRecords() const { return m_records; }
    /// Whether the block held a hash just before event `sequence` (cached and not evicted since).
    bool cachedAt(std::int32_t block, std::uint64_t sequence) const;
    const StepChanges& changes(std::int64_t step) const;
    const StepMetrics& metrics(std::int64_t step) const;
    LaneCell lane(const std::string& id, std::int64_t step) const;
    /// The step a request finished in (its lane shows Finished from the next step on), -1 while it has not.
    std::int64_t finishedStep(const std::string& id) const;

    /// The blocks a RequestAdmitted event's request reused (its BlockTouched events of that admission).
    std::vector<std::int32_t> hitsOf(std::uint64_t admittedSequence) const;
    /// The blocks a RequestPreempted or RequestFinished event's request released, in freeing order.
    std::vector<Release> releasesOf(std::uint64_t sequence) const;
    /// For a RequestPreempted event: the request whose allocation failed (the next to get a block in that
    /// step), or empty when the preempted request needed the block itself.
    std::string preemptedFor(std::uint64_t sequence) const;

private:
    struct RequestRecord {
        std::string id;
        std::int64_t arrivalStep = 0;
        std::int64_t promptTokens = 0;
        std::vector<std::int64_t> tokenIds;
        std::vector<std::optional<std::string>> pieces;
        std::vector<LaneCell> lane;    ///< from step 0
        Phase carried = Phase::Absent; ///< what the next step starts as
        std::int64_t finishedStep = -1;
    };
    void openStep(std::int64_t step);
    void apply(const trace::Event& event);
    RequestRecord* find(const std::string& id);
    const RequestRecord* find(const std::string& id) const;
    LaneCell& cellOf(RequestRecord& request);

    std::size_t m_read = 0; ///< timeline events read
    std::optional<trace::PagedPoolEvent> m_pool;
    std::vector<RequestRecord> m_requests;
    std::vector<std::string> m_requestIds;
    std::unordered_map<std::string, std::size_t> m_index;
    std::unordered_map<std::int32_t, std::vector<CacheRecord>> m_cached;
    std::unordered_map<std::int32_t, std::vector<std::uint64_t>> m_evictedAt;
    std::vector<CacheRecord> m_records;
    std::vector<StepChanges> m_changes;
    std::vector<StepMetrics> m_metrics;
    std::int32_t m_used = 0;
    std::int32_t m_freeLength = 0;
    // Per RequestAdmitted / RequestPreempted / RequestFinished event sequence.
    std::map<std::uint64_t, std::vector<std::int32_t>> m_hits;
    std::map<std::uint64_t, std::vector<Release>> m_releases;
    std::map<std::uint64_t, std::string> m_preemptedFor;
    // Within the step being read: touched blocks per request since its last admission, the open
    // preemption or finish whose frees follow, preemptions waiting to learn whom they served.
    std::unordered_map<std::string, std::vector<std::int32_t>> m_pendingHits;
    std::optional<std::pair<std::uint64_t, std::string>> m_openRelease;
    std::vector<std::pair<std::uint64_t, std::string>> m_openPreemptions;
};

} // namespace kvscope::gui
