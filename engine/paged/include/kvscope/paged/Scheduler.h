// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/KVCacheManager.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedRecorder.h"
#include "kvscope/paged/Request.h"
#include "kvscope/paged/SchedulerOutput.h"
#include "kvscope/trace/PagedState.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvscope::trace {
class EventEmitter;
}

namespace kvscope::paged {

/// Totals of a run (kvscope-cli serve prints them).
struct SchedulerStats {
    std::int64_t queryTokens = 0; ///< tokens looked up in the prefix cache at admissions
    std::int64_t hitTokens = 0;   ///< of which found
    /// As vLLM's vllm:prefix_cache_queries / _hits: tokens looked up and found at first admissions only (a
    /// preempted request's lookups are its preempted_* counts), and none without prefix caching.
    std::int64_t prefixCacheQueries = 0;
    std::int64_t prefixCacheHits = 0;
    std::int64_t evictions = 0;
    std::int64_t preemptions = 0;
    std::int32_t peakBlocksUsed = 0;
    double prefixHitRate() const {
        return queryTokens > 0 ? static_cast<double>(hitTokens) / static_cast<double>(queryTokens) : 0.0;
    }
};

/// Continuous batching as vLLM v1's scheduler: FCFS waiting queue; each step a token budget
/// (maxNumBatchedTokens) and at most maxNumSeqs running; running requests first, in running order, each
/// given what it still has to compute (a decode: 1 token; a chunked prefill: up to the budget), then
/// waiting requests, admitted with their prefix hit while budget, seats and blocks last. A running request
/// that cannot get a block preempts the last running request (possibly itself): its blocks are freed, its
/// computed tokens reset, it goes to the front of the waiting queue and looks the prefix cache up again
/// when it resumes; no waiting request is admitted in a step that preempted. A waiting request that
/// cannot get blocks waits. A request finishes at eos (unless ignoreEos), at maxTokens outputs, or at
/// maxModelLen tokens.
///
/// Driving it: while (hasUnfinishedRequests()) { out = schedule(); sampled = model(out); update(out,
/// sampled); } A step with nothing to run (before the next arrival) is still a step.
class Scheduler {
public:
    /// Validates the config (PagedError) and records the pool's configuration when an emitter is given.
    explicit Scheduler(const PagedConfig& config, trace::EventEmitter* emitter = nullptr);
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    /// Queues a request for its arrival step. PagedError: duplicate id, empty prompt, maxTokens < 1, or an
    /// arrival step already past.
    void addRequest(Request request);

    /// One step: admits arrivals, schedules, allocates (events stamped with step()). PagedError when a
    /// request can never fit the pool (it alone needs more blocks than the pool has).
    SchedulerOutput schedule();
    /// Applies a step's results: sampled[i] is the token of output.requests[i] (read only where samples).
    /// Appends the tokens, finishes requests (eos, maxTokens, maxModelLen) and frees their blocks; the
    /// step advances. Returns the ids finished in this step.
    std::vector<std::string> update(const SchedulerOutput& output, std::span<const TokenId> sampled,
                                    TokenId eosTokenId = -1);

    bool hasUnfinishedRequests() const { return m_numFinished < m_requests.size(); }
    /// The step the next schedule() runs.
    std::int64_t step() const { return m_step; }

    const Request& request(std::string_view id) const;
    /// Every request in the order they were added.
    std::vector<const Request*> requests() const;
    std::vector<const Request*> running() const;
    std::vector<const Request*> waiting() const;
    const KVCacheManager& cacheManager() const { return m_manager; }
    const PagedConfig& config() const { return m_config; }
    /// Records each token's text with its id (RequestTokens events): a model's text codec.
    void setPieceFunction(std::function<std::string(TokenId)> pieceOf) {
        m_recorder.setPieceFunction(std::move(pieceOf));
    }
    SchedulerStats stats() const;
    /// Publishes the pool's prefix-cache events (blocks stored, evicted) to `sink` as vLLM's KV events
    /// carry them; null: none. The sink must outlive the scheduler's use of it.
    void setKvEventSink(KvEventSink* sink) { m_manager.pool().setKvEventSink(sink); }

    /// The live bookkeeping in the form replay rebuilds from events (trace::PagedState), to compare the two.
    trace::PagedState pagedState() const;

private:
    Request& mutableRequest(const std::string& id);
    void admitArrivals();
    void finish(Request& request, trace::FinishReason reason);
    void preempt(Request& request);
    ScheduledRequest describe(const Request& request, std::int64_t numNewTokens) const;

    PagedConfig m_config;
    PagedRecorder m_recorder;
    KVCacheManager m_manager;
    std::vector<std::unique_ptr<Request>> m_requests; // in the order added
    std::unordered_map<std::string, Request*> m_byId;
    std::vector<Request*> m_pending;      // sorted by arrival step, then order added
    std::vector<Request*> m_arrivalOrder; // as they joined the waiting queue
    std::size_t m_nextPending = 0;
    std::deque<Request*> m_waiting;
    std::vector<Request*> m_running;
    std::size_t m_numFinished = 0;
    std::int64_t m_step = 0;
    std::int64_t m_queryTokens = 0;
    std::int64_t m_hitTokens = 0;
    std::int64_t m_prefixCacheQueries = 0;
    std::int64_t m_prefixCacheHits = 0;
    std::int64_t m_preemptions = 0;
    std::int32_t m_peakBlocksUsed = 0;
};

} // namespace kvscope::paged
