// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/ServerCacheHistory.h"

#include "kvscope/trace/ServerCacheStateReducer.h"
#include "kvscope/trace/Timeline.h"

namespace kvscope::gui {

void ServerCacheHistory::clear() {
    m_read = 0;
    m_state = {};
    m_now.clear();
    m_held.clear();
    m_steps.clear();
}

void ServerCacheHistory::extend(const trace::Timeline& timeline) {
    const std::span<const trace::Event> events = timeline.retainedEvents();
    if (events.size() < m_read) {
        clear(); // a new session in the same timeline
    }
    for (; m_read < events.size(); ++m_read) {
        const trace::Event& event = events[m_read];
        if (!trace::isServerKind(event.kind())) {
            continue;
        }
        openStep(event.step);
        apply(event);
    }
    if (m_state.active && timeline.stepCount() > 0) {
        openStep(timeline.stepCount() - 1);
    }
}

void ServerCacheHistory::openStep(std::int64_t step) {
    while (stepCount() <= step) {
        StepCounts counts;
        if (!m_steps.empty()) {
            counts.hitRate = m_steps.back().hitRate;
        }
        m_steps.push_back(counts);
        for (auto& [place, held] : m_held) {
            held.push_back(held.empty() ? 0 : held.back());
        }
    }
}

void ServerCacheHistory::apply(const trace::Event& event) {
    StepCounts& counts = m_steps.back();
    if (const auto* cache = std::get_if<trace::ServerCacheEvent>(&event.payload)) {
        // Counted against the state before the event: a block stored again is not a new one.
        switch (cache->change) {
        case trace::ServerCacheChange::Stored:
            for (const std::uint64_t hash : cache->blockHashes) {
                const auto found = m_state.blocks.find({cache->medium, hash});
                if (found != m_state.blocks.end()) {
                    --m_now[{found->second.medium, found->second.group}];
                }
                ++m_now[{cache->medium, cache->group}];
                ++counts.stored;
            }
            break;
        case trace::ServerCacheChange::Removed:
            for (const std::uint64_t hash : cache->blockHashes) {
                const auto found = m_state.blocks.find({cache->medium, hash});
                if (found != m_state.blocks.end()) {
                    --m_now[{found->second.medium, found->second.group}];
                    ++counts.removed;
                }
            }
            break;
        case trace::ServerCacheChange::Cleared:
            counts.removed += static_cast<std::int64_t>(m_state.blocks.size());
            for (auto& [place, held] : m_now) {
                held = 0;
            }
            break;
        }
    } else if (const auto* status = std::get_if<trace::ServerStatusEvent>(&event.payload)) {
        if (status->prefixCacheQueries > 0 && status->prefixCacheHits >= 0) {
            counts.hitRate = 100.0 * static_cast<double>(status->prefixCacheHits) /
                             static_cast<double>(status->prefixCacheQueries);
        }
    }
    trace::ServerCacheStateReducer::apply(m_state, event);
    const std::int64_t step = stepCount() - 1;
    for (const auto& [place, held] : m_now) {
        std::vector<std::int64_t>& series = m_held[place];
        series.resize(static_cast<std::size_t>(step) + 1, series.empty() ? 0 : series.back());
        series.back() = held;
    }
}

} // namespace kvscope::gui
