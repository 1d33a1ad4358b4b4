// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/ServerCacheState.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvscope::trace {
class Timeline;
}

namespace kvscope::gui {

/// An attached server's cache over time: per step, the blocks it holds in each medium and KV cache group, the
/// blocks stored and removed in the step, and the prefix-cache hit rate its /metrics gave. Built from a
/// Timeline's retained events (live and replayed alike) and extended as a live session grows; Qt-free.
class ServerCacheHistory {
public:
    /// Where blocks live: the server's medium name and the KV cache group.
    using Place = std::pair<std::string, std::int32_t>;
    struct StepCounts {
        std::int64_t stored = 0;  ///< blocks stored in the step
        std::int64_t removed = 0; ///< blocks removed (or cleared) in the step
        /// Tokens the server found in its prefix cache per token looked up, over everything before the step's
        /// metrics (percent); negative where the server's metrics are not known.
        double hitRate = -1;
    };

    void clear();
    /// Reads the timeline's events not read yet (all of them after clear()).
    void extend(const trace::Timeline& timeline);

    bool active() const { return m_state.active; }
    std::int64_t stepCount() const { return static_cast<std::int64_t>(m_steps.size()); }
    /// Per place, the blocks held after each step (stepCount() values), places in name order.
    const std::map<Place, std::vector<std::int64_t>>& heldBlocks() const { return m_held; }
    const std::vector<StepCounts>& steps() const { return m_steps; }
    /// The cache after the last step read.
    const trace::ServerCacheState& latest() const { return m_state; }

private:
    void openStep(std::int64_t step);
    void apply(const trace::Event& event);

    std::size_t m_read = 0;
    trace::ServerCacheState m_state;
    std::map<Place, std::int64_t> m_now;
    std::map<Place, std::vector<std::int64_t>> m_held;
    std::vector<StepCounts> m_steps;
};

} // namespace kvscope::gui
