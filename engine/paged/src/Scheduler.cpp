// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/Scheduler.h"

#include "CeilDiv.h"

#include "kvscope/paged/PagedError.h"
#include "kvscope/trace/Event.h"

#include <algorithm>

namespace kvscope::paged {

namespace {

const PagedConfig& validated(const PagedConfig& config) {
    config.validate();
    return config;
}

trace::PagedRequestPhase phaseOf(RequestState state) {
    switch (state) {
    case RequestState::Running:
        return trace::PagedRequestPhase::Running;
    case RequestState::Preempted:
        return trace::PagedRequestPhase::Preempted;
    case RequestState::Finished:
        return trace::PagedRequestPhase::Finished;
    default:
        return trace::PagedRequestPhase::Waiting;
    }
}

} // namespace

Scheduler::Scheduler(const PagedConfig& config, trace::EventEmitter* emitter)
    : m_config(validated(config)), m_recorder(emitter), m_manager(m_config, &m_recorder) {
    m_recorder.setStep(0);
    m_recorder.pool(m_config, m_manager.pool().nullBlock());
}

void Scheduler::addRequest(Request request) {
    const std::string where = "request '" + request.id + "'";
    if (request.id.empty())
        throw PagedError("a request has an empty id: give every request a unique \"id\"");
    if (m_byId.contains(request.id))
        throw PagedError(where + " appears twice: request ids must be unique");
    if (request.promptIds.empty())
        throw PagedError(where + " has an empty prompt: at least one token is needed");
    if (request.maxTokens < 1)
        throw PagedError(where + " asks for " + std::to_string(request.maxTokens) +
                         " tokens: max_tokens must be at least 1");
    if (request.arrivalStep < m_step)
        throw PagedError(where + " arrives at step " + std::to_string(request.arrivalStep) +
                         ", which has passed (the scheduler is at step " + std::to_string(m_step) + ")");
    request.state = RequestState::Pending;
    request.outputIds.clear();
    request.numComputedTokens = 0;
    auto owned = std::make_unique<Request>(std::move(request));
    Request* raw = owned.get();
    m_byId.emplace(raw->id, raw);
    m_requests.push_back(std::move(owned));
    // Stable by arrival step, so requests of one step keep the order they were added in.
    const auto at =
        std::upper_bound(m_pending.begin() + static_cast<std::ptrdiff_t>(m_nextPending), m_pending.end(), raw,
                         [](const Request* a, const Request* b) { return a->arrivalStep < b->arrivalStep; });
    m_pending.insert(at, raw);
}

Request& Scheduler::mutableRequest(const std::string& id) {
    const auto it = m_byId.find(id);
    if (it == m_byId.end())
        throw PagedError("no request '" + id + "' in the scheduler");
    return *it->second;
}

const Request& Scheduler::request(std::string_view id) const {
    const auto it = m_byId.find(std::string(id));
    if (it == m_byId.end())
        throw PagedError("no request '" + std::string(id) + "' in the scheduler");
    return *it->second;
}

void Scheduler::admitArrivals() {
    while (m_nextPending < m_pending.size() && m_pending[m_nextPending]->arrivalStep <= m_step) {
        Request* request = m_pending[m_nextPending++];
        request->state = RequestState::Waiting;
        m_arrivalOrder.push_back(request);
        m_waiting.push_back(request);
        m_recorder.arrived(request->id, request->numPromptTokens(), request->maxTokens);
        m_recorder.tokens(request->id, 0, request->promptIds);
    }
}

void Scheduler::preempt(Request& request) {
    m_recorder.preempted(request.id, request.numComputedTokens);
    m_manager.free(request);
    request.numComputedTokens = 0;
    request.state = RequestState::Preempted;
    ++request.preemptions;
    ++m_preemptions;
    m_waiting.push_front(&request);
}

void Scheduler::finish(Request& request, trace::FinishReason reason) {
    m_recorder.finished(request.id, reason, static_cast<std::int64_t>(request.outputIds.size()));
    request.finalBlockTables = m_manager.blockTables(request.id);
    m_manager.free(request);
    request.state = RequestState::Finished;
    request.finishedStep = m_step;
    ++m_numFinished;
}

ScheduledRequest Scheduler::describe(const Request& request, std::int64_t numNewTokens) const {
    ScheduledRequest scheduled;
    scheduled.requestId = request.id;
    scheduled.firstPosition = request.numComputedTokens;
    scheduled.tokenIds.reserve(static_cast<std::size_t>(numNewTokens));
    for (std::int64_t i = 0; i < numNewTokens; ++i)
        scheduled.tokenIds.push_back(request.tokenAt(request.numComputedTokens + i));
    scheduled.blockTables = m_manager.blockTables(request.id);
    scheduled.samples = request.numComputedTokens + numNewTokens >= request.numTokens();
    return scheduled;
}

SchedulerOutput Scheduler::schedule() {
    m_recorder.setStep(m_step);
    admitArrivals();

    SchedulerOutput output;
    output.step = m_step;
    struct Pick {
        Request* request;
        std::int64_t numNewTokens;
        bool admitted;
        std::int64_t cachedTokens;
    };
    std::vector<Pick> picks;
    std::int64_t budget = m_config.maxNumBatchedTokens;

    // Running requests first, in running order: a decode needs one token, a chunked prefill the rest of
    // its prompt, both within the budget.
    std::size_t index = 0;
    while (index < m_running.size() && budget > 0) {
        Request& request = *m_running[index];
        const std::int64_t numNewTokens = std::min(request.numTokens() - request.numComputedTokens, budget);
        if (numNewTokens <= 0) {
            ++index;
            continue;
        }
        bool scheduled = false;
        while (true) {
            if (m_manager.allocateSlots(request, numNewTokens)) {
                scheduled = true;
                break;
            }
            // No block: the last running request gives its blocks back, possibly this one.
            Request& victim = *m_running.back();
            m_running.pop_back();
            if (&victim == &request && m_running.empty()) {
                const std::int64_t blocks = ceilDiv(request.numTokens(), m_config.blockSize);
                throw PagedError(
                    "request '" + request.id + "' alone needs more blocks than the pool holds (" +
                    std::to_string(blocks) + " blocks of " + std::to_string(m_config.blockSize) +
                    " tokens per full-attention group for its " + std::to_string(request.numTokens()) +
                    " tokens, " + std::to_string(m_manager.pool().numBlocks()) +
                    " in the pool): raise --num-blocks or lower its max_tokens");
            }
            preempt(victim);
            output.preempted.push_back(victim.id);
            if (&victim == &request)
                break;
        }
        if (!scheduled)
            break;
        picks.push_back({&request, numNewTokens, false, 0});
        budget -= numNewTokens;
        ++index;
    }

    // Then waiting requests, first come first served, unless this step preempted.
    if (output.preempted.empty()) {
        while (!m_waiting.empty() && budget > 0 &&
               static_cast<std::int32_t>(m_running.size()) < m_config.maxNumSeqs) {
            Request& request = *m_waiting.front();
            const ComputedBlocks hit = m_manager.computedBlocks(request);
            const std::int64_t numNewTokens = std::min(request.numTokens() - hit.numTokens, budget);
            if (!m_manager.allocateSlots(request, numNewTokens, hit)) {
                if (m_running.empty()) {
                    throw PagedError("request '" + request.id + "' cannot get the blocks for its first " +
                                     std::to_string(hit.numTokens + numNewTokens) +
                                     " tokens from a pool of " +
                                     std::to_string(m_manager.pool().numBlocks()) +
                                     " blocks with nothing else running: raise --num-blocks or lower "
                                     "--max-num-batched-tokens");
                }
                break; // it waits; a waiting request preempts no one
            }
            m_waiting.pop_front();
            const bool resumed = request.state == RequestState::Preempted;
            request.state = RequestState::Running;
            request.numComputedTokens = hit.numTokens;
            if (request.cachedTokens < 0)
                request.cachedTokens = hit.numTokens;
            m_queryTokens += request.numTokens();
            m_hitTokens += hit.numTokens;
            if (!resumed && m_config.prefixCaching) {
                m_prefixCacheQueries += request.numTokens();
                m_prefixCacheHits += hit.numTokens;
            }
            m_running.push_back(&request);
            m_recorder.admitted(request.id, request.numTokens(), hit.numTokens, resumed);
            picks.push_back({&request, numNewTokens, true, hit.numTokens});
            budget -= numNewTokens;
        }
    }

    output.requests.reserve(picks.size());
    for (const Pick& pick : picks) {
        Request& request = *pick.request;
        ScheduledRequest scheduled = describe(request, pick.numNewTokens);
        scheduled.admitted = pick.admitted;
        scheduled.cachedTokens = pick.cachedTokens;
        m_recorder.scheduled(request.id, scheduled.firstPosition, pick.numNewTokens, scheduled.samples);
        // As vLLM's _update_after_schedule: the tokens count as computed once scheduled.
        request.numComputedTokens += pick.numNewTokens;
        output.requests.push_back(std::move(scheduled));
    }
    m_peakBlocksUsed = std::max(m_peakBlocksUsed, m_manager.pool().numUsedBlocks());
    return output;
}

std::vector<std::string> Scheduler::update(const SchedulerOutput& output, std::span<const TokenId> sampled,
                                           TokenId eosTokenId) {
    m_recorder.setStep(m_step);
    std::vector<std::string> finished;
    for (std::size_t i = 0; i < output.requests.size(); ++i) {
        const ScheduledRequest& scheduled = output.requests[i];
        if (!scheduled.samples)
            continue;
        Request& request = mutableRequest(scheduled.requestId);
        if (request.state != RequestState::Running)
            continue;
        if (i >= sampled.size())
            throw PagedError("update got " + std::to_string(sampled.size()) + " sampled tokens for " +
                             std::to_string(output.requests.size()) +
                             " scheduled requests: give one per request");
        const TokenId token = sampled[i];
        request.outputIds.push_back(token);
        m_recorder.tokens(request.id, request.numTokens() - 1, std::span<const TokenId>(&token, 1));
        if (request.firstTokenStep < 0)
            request.firstTokenStep = m_step;
        std::optional<trace::FinishReason> reason;
        if (!request.ignoreEos && token == eosTokenId)
            reason = trace::FinishReason::Eos;
        else if (static_cast<std::int64_t>(request.outputIds.size()) >= request.maxTokens)
            reason = trace::FinishReason::MaxTokens;
        else if (m_config.maxModelLen > 0 && request.numTokens() >= m_config.maxModelLen)
            reason = trace::FinishReason::MaxModelLen;
        if (reason) {
            finish(request, *reason);
            finished.push_back(request.id);
        }
    }
    if (!finished.empty()) {
        std::erase_if(m_running, [](const Request* request) { return request->isFinished(); });
    }
    ++m_step;
    return finished;
}

std::vector<const Request*> Scheduler::requests() const {
    std::vector<const Request*> all;
    all.reserve(m_requests.size());
    for (const auto& request : m_requests)
        all.push_back(request.get());
    return all;
}

std::vector<const Request*> Scheduler::running() const {
    return {m_running.begin(), m_running.end()};
}

std::vector<const Request*> Scheduler::waiting() const {
    return {m_waiting.begin(), m_waiting.end()};
}

SchedulerStats Scheduler::stats() const {
    SchedulerStats stats;
    stats.queryTokens = m_queryTokens;
    stats.hitTokens = m_hitTokens;
    stats.prefixCacheQueries = m_prefixCacheQueries;
    stats.prefixCacheHits = m_prefixCacheHits;
    stats.evictions = m_manager.pool().evictions();
    stats.preemptions = m_preemptions;
    stats.peakBlocksUsed = m_peakBlocksUsed;
    return stats;
}

trace::PagedState Scheduler::pagedState() const {
    const BlockPool& pool = m_manager.pool();
    trace::PagedState state;
    state.active = true;
    state.blockSize = m_config.blockSize;
    state.numBlocks = pool.numBlocks();
    state.nullBlock = pool.nullBlock();
    state.prefixCaching = m_config.prefixCaching;
    state.freePolicy = static_cast<std::uint8_t>(m_config.freePolicy);
    for (const LayerGroup& group : m_config.groups)
        state.groupWindows.push_back(group.kind == GroupKind::Full ? 0 : group.window);
    state.freeQueue = pool.freeQueue().toVector();
    state.blocks.reserve(pool.blocks().size());
    for (const KVCacheBlock& block : pool.blocks())
        state.blocks.push_back(
            {block.id, block.refCnt, block.hash.has_value(), block.hash.value_or(0), block.group});
    for (const Request* request : m_arrivalOrder) {
        trace::PagedRequestState entry;
        entry.id = request->id;
        entry.phase = phaseOf(request->state);
        if (request->state == RequestState::Running)
            entry.blockTables = m_manager.blockTables(request->id);
        else if (request->state == RequestState::Finished)
            entry.blockTables = request->finalBlockTables;
        else
            entry.blockTables.resize(m_config.groups.size());
        entry.numComputedTokens = request->numComputedTokens;
        entry.promptTokens = request->numPromptTokens();
        entry.cachedTokens = request->cachedTokens;
        entry.preemptions = request->preemptions;
        entry.outputTokens = request->state == RequestState::Finished
                                 ? static_cast<std::int64_t>(request->outputIds.size())
                                 : 0;
        state.requests.push_back(std::move(entry));
    }
    state.evictions = pool.evictions();
    state.preemptions = m_preemptions;
    state.queryTokens = m_queryTokens;
    state.hitTokens = m_hitTokens;
    return state;
}

} // namespace kvscope::paged
