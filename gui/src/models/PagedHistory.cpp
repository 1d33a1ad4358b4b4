// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PagedHistory.h"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace kvscope::gui {

void PagedHistory::clear() {
    *this = PagedHistory{};
}

void PagedHistory::extend(const trace::Timeline& timeline) {
    const std::span<const trace::Event> events = timeline.retainedEvents();
    if (events.size() < m_read) {
        clear(); // a new session in the same timeline
    }
    for (; m_read < events.size(); ++m_read) {
        const trace::Event& event = events[m_read];
        if (!trace::isPagedKind(event.kind()) && !m_pool) {
            continue;
        }
        openStep(event.step);
        apply(event);
    }
    // Steps without events (none in practice) still get their rows.
    if (m_pool && timeline.stepCount() > 0) {
        openStep(timeline.stepCount() - 1);
    }
}

void PagedHistory::openStep(std::int64_t step) {
    if (!m_pool || step < stepCount()) {
        return;
    }
    while (stepCount() <= step) {
        const std::int64_t opened = stepCount();
        StepMetrics metrics;
        if (!m_metrics.empty()) {
            metrics.totalQueryTokens = m_metrics.back().totalQueryTokens;
            metrics.totalHitTokens = m_metrics.back().totalHitTokens;
            metrics.runningRequests = m_metrics.back().runningRequests;
        }
        metrics.usedBlocks = m_used;
        metrics.scheduledBlocks = m_used;
        m_metrics.push_back(metrics);
        m_changes.emplace_back();
        for (RequestRecord& request : m_requests) {
            request.lane.resize(static_cast<std::size_t>(opened + 1));
            request.lane.back().phase = request.carried;
        }
        m_pendingHits.clear();
        m_openRelease.reset();
        m_openPreemptions.clear();
    }
}

PagedHistory::RequestRecord* PagedHistory::find(const std::string& id) {
    const auto found = m_index.find(id);
    return found == m_index.end() ? nullptr : &m_requests[found->second];
}

const PagedHistory::RequestRecord* PagedHistory::find(const std::string& id) const {
    const auto found = m_index.find(id);
    return found == m_index.end() ? nullptr : &m_requests[found->second];
}

PagedHistory::LaneCell& PagedHistory::cellOf(RequestRecord& request) {
    request.lane.resize(static_cast<std::size_t>(stepCount()));
    return request.lane.back();
}

void PagedHistory::apply(const trace::Event& event) {
    using namespace trace;
    if (event.kind() == EventKind::PagedPool) {
        const auto& pool = std::get<PagedPoolEvent>(event.payload);
        const std::size_t read = m_read;
        clear(); // a pool starts a serving session: nothing before it belongs to this one
        m_read = read;
        m_pool = pool;
        m_freeLength = pool.numBlocks - (pool.nullBlock >= 0 ? 1 : 0);
        m_used = 0;
        openStep(event.step);
        return;
    }
    if (!m_pool || event.step >= stepCount()) {
        return;
    }
    StepMetrics& metrics = m_metrics.back();
    StepChanges& changes = m_changes.back();
    const auto usedNow = [this, &metrics] {
        m_used = m_pool->numBlocks - (m_pool->nullBlock >= 0 ? 1 : 0) - m_freeLength;
        metrics.usedBlocks = m_used;
    };
    // A frees run belongs to the preemption or finish just before it; any other event closes it.
    if (event.kind() != EventKind::BlockFreed) {
        m_openRelease.reset();
    }
    std::visit(
        [&](const auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, RequestArrivedEvent>) {
                if (find(e.requestId) != nullptr) {
                    return;
                }
                RequestRecord request;
                request.id = e.requestId;
                request.arrivalStep = event.step;
                request.promptTokens = e.promptTokens;
                request.lane.resize(static_cast<std::size_t>(stepCount()));
                request.lane.back().phase = Phase::Waiting;
                request.carried = Phase::Waiting;
                m_index.emplace(e.requestId, m_requests.size());
                m_requestIds.push_back(e.requestId);
                m_requests.push_back(std::move(request));
            } else if constexpr (std::is_same_v<T, RequestTokensEvent>) {
                RequestRecord* request = find(e.requestId);
                if (request == nullptr || e.firstPosition < 0) {
                    return;
                }
                const auto end = static_cast<std::size_t>(e.firstPosition) + e.tokenIds.size();
                if (request->tokenIds.size() < end) {
                    request->tokenIds.resize(end, -1);
                    request->pieces.resize(end);
                }
                const bool hasText = e.pieceEnds.size() == e.tokenIds.size();
                std::int64_t begin = 0;
                for (std::size_t i = 0; i < e.tokenIds.size(); ++i) {
                    const auto at = static_cast<std::size_t>(e.firstPosition) + i;
                    request->tokenIds[at] = e.tokenIds[i];
                    const std::int64_t pieceEnd = hasText ? e.pieceEnds[i] : -1;
                    if (hasText && pieceEnd >= begin &&
                        pieceEnd <= static_cast<std::int64_t>(e.text.size())) {
                        request->pieces[at] = e.text.substr(static_cast<std::size_t>(begin),
                                                            static_cast<std::size_t>(pieceEnd - begin));
                        begin = pieceEnd;
                    }
                }
            } else if constexpr (std::is_same_v<T, RequestAdmittedEvent>) {
                metrics.queryTokens += e.numTokens;
                metrics.hitTokens += e.cachedTokens;
                metrics.totalQueryTokens += e.numTokens;
                metrics.totalHitTokens += e.cachedTokens;
                ++metrics.runningRequests;
                m_hits[event.sequence] = std::move(m_pendingHits[e.requestId]);
                m_pendingHits.erase(e.requestId);
                if (RequestRecord* request = find(e.requestId)) {
                    request->carried = Phase::Idle;
                    cellOf(*request).phase = Phase::Idle;
                }
            } else if constexpr (std::is_same_v<T, RequestScheduledEvent>) {
                // Scheduled after every allocation of the step and before any finish frees.
                metrics.scheduledBlocks = m_used;
                metrics.scheduledTokens += e.numTokens;
                if (RequestRecord* request = find(e.requestId)) {
                    LaneCell& cell = cellOf(*request);
                    const bool prefill = e.firstPosition < request->promptTokens || e.numTokens > 1;
                    cell.phase = prefill ? Phase::Prefill : Phase::Decode;
                    cell.firstPosition = e.firstPosition;
                    cell.numTokens = e.numTokens;
                    cell.samples = e.samples;
                    request->carried = Phase::Idle;
                }
            } else if constexpr (std::is_same_v<T, RequestPreemptedEvent>) {
                ++metrics.preemptions;
                metrics.runningRequests = std::max(0, metrics.runningRequests - 1);
                m_openRelease.emplace(event.sequence, e.requestId);
                m_releases[event.sequence];
                m_openPreemptions.emplace_back(event.sequence, e.requestId);
                m_preemptedFor[event.sequence];
                if (RequestRecord* request = find(e.requestId)) {
                    cellOf(*request) = LaneCell{Phase::Preempted};
                    request->carried = Phase::Waiting;
                }
            } else if constexpr (std::is_same_v<T, RequestFinishedEvent>) {
                metrics.runningRequests = std::max(0, metrics.runningRequests - 1);
                m_openRelease.emplace(event.sequence, e.requestId);
                m_releases[event.sequence];
                if (RequestRecord* request = find(e.requestId)) {
                    // A request finishes in the step that computed its last token: the lane keeps that
                    // step's work and shows Finished from the next step on.
                    request->carried = Phase::Finished;
                    request->finishedStep = event.step;
                }
            } else if constexpr (std::is_same_v<T, BlockAllocatedEvent>) {
                changes.allocated.push_back(e.block);
                --m_freeLength;
                usedNow();
                // The first allocation after preemptions in this step is for the request that needed it.
                for (const auto& [sequence, victim] : m_openPreemptions) {
                    if (victim != e.requestId) {
                        m_preemptedFor[sequence] = e.requestId;
                    }
                }
                m_openPreemptions.clear();
            } else if constexpr (std::is_same_v<T, BlockTouchedEvent>) {
                changes.touched.push_back(e.block);
                m_pendingHits[e.requestId].push_back(e.block);
                if (e.refCnt == 1) {
                    --m_freeLength; // it was free (cached, reference count 0)
                    usedNow();
                }
            } else if constexpr (std::is_same_v<T, BlockCachedEvent>) {
                changes.cached.push_back(e.block);
                m_records.push_back(CacheRecord{event.sequence, event.step, e.requestId, e.group, e.block, e.hash,
                                                e.parentHash, e.tokenBegin, e.tokenEnd});
                m_cached[e.block].push_back(m_records.back());
            } else if constexpr (std::is_same_v<T, BlockFreedEvent>) {
                changes.freed.push_back(e.block);
                if (e.queuePosition >= 0) {
                    ++m_freeLength;
                    usedNow();
                }
                if (m_openRelease && m_openRelease->second == e.requestId && !e.windowed) {
                    m_releases[m_openRelease->first].push_back(
                        Release{e.block, e.refCnt, e.queuePosition, e.queuePosition >= 0 ? m_freeLength : 0});
                }
            } else if constexpr (std::is_same_v<T, BlockEvictedEvent>) {
                changes.evicted.push_back(e.block);
                m_evictedAt[e.block].push_back(event.sequence);
                ++metrics.evictions;
            }
        },
        event.payload);
}

int PagedHistory::requestIndex(const std::string& id) const {
    const auto found = m_index.find(id);
    return found == m_index.end() ? -1 : static_cast<int>(found->second);
}

std::int64_t PagedHistory::promptTokens(const std::string& id) const {
    const RequestRecord* request = find(id);
    return request == nullptr ? 0 : request->promptTokens;
}

std::int64_t PagedHistory::tokenCount(const std::string& id) const {
    const RequestRecord* request = find(id);
    return request == nullptr ? 0 : static_cast<std::int64_t>(request->tokenIds.size());
}

std::optional<std::string> PagedHistory::piece(const std::string& id, std::int64_t position) const {
    const RequestRecord* request = find(id);
    if (request == nullptr || position < 0 || position >= static_cast<std::int64_t>(request->pieces.size())) {
        return std::nullopt;
    }
    return request->pieces[static_cast<std::size_t>(position)];
}

std::optional<std::string> PagedHistory::text(const std::string& id, std::int64_t begin,
                                              std::int64_t end) const {
    std::string joined;
    for (std::int64_t position = begin; position < end; ++position) {
        const std::optional<std::string> one = piece(id, position);
        if (!one) {
            return std::nullopt;
        }
        joined += *one;
    }
    return joined;
}

const PagedHistory::CacheRecord* PagedHistory::cachedBy(std::int32_t block, std::uint64_t sequence) const {
    const auto found = m_cached.find(block);
    if (found == m_cached.end()) {
        return nullptr;
    }
    const CacheRecord* latest = nullptr;
    for (const CacheRecord& record : found->second) {
        if (record.sequence < sequence) {
            latest = &record;
        }
    }
    return latest;
}

bool PagedHistory::cachedAt(std::int32_t block, std::uint64_t sequence) const {
    const CacheRecord* record = cachedBy(block, sequence);
    if (record == nullptr) {
        return false;
    }
    const auto evictions = m_evictedAt.find(block);
    if (evictions != m_evictedAt.end()) {
        for (const std::uint64_t evicted : evictions->second) {
            if (evicted > record->sequence && evicted < sequence) {
                return false;
            }
        }
    }
    return true;
}

const PagedHistory::StepChanges& PagedHistory::changes(std::int64_t step) const {
    static const StepChanges none;
    return step >= 0 && step < stepCount() ? m_changes[static_cast<std::size_t>(step)] : none;
}

const PagedHistory::StepMetrics& PagedHistory::metrics(std::int64_t step) const {
    static const StepMetrics none;
    return step >= 0 && step < stepCount() ? m_metrics[static_cast<std::size_t>(step)] : none;
}

PagedHistory::LaneCell PagedHistory::lane(const std::string& id, std::int64_t step) const {
    const RequestRecord* request = find(id);
    if (request == nullptr || step < 0) {
        return {};
    }
    if (step < static_cast<std::int64_t>(request->lane.size())) {
        return request->lane[static_cast<std::size_t>(step)];
    }
    return step < stepCount() ? LaneCell{request->carried} : LaneCell{};
}

std::int64_t PagedHistory::finishedStep(const std::string& id) const {
    const RequestRecord* request = find(id);
    return request == nullptr ? -1 : request->finishedStep;
}

std::vector<std::int32_t> PagedHistory::hitsOf(std::uint64_t admittedSequence) const {
    const auto found = m_hits.find(admittedSequence);
    return found == m_hits.end() ? std::vector<std::int32_t>{} : found->second;
}

std::vector<PagedHistory::Release> PagedHistory::releasesOf(std::uint64_t sequence) const {
    const auto found = m_releases.find(sequence);
    return found == m_releases.end() ? std::vector<Release>{} : found->second;
}

std::string PagedHistory::preemptedFor(std::uint64_t sequence) const {
    const auto found = m_preemptedFor.find(sequence);
    return found == m_preemptedFor.end() ? std::string{} : found->second;
}

} // namespace kvscope::gui
