// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::trace {

/// One block of a paged pool as the events left it.
struct PagedBlockState {
    std::int32_t id = 0;
    std::int32_t refCnt = 0;
    bool cached = false;     ///< holds a prefix hash
    std::uint64_t hash = 0;  ///< meaningful when cached
    std::int32_t group = -1; ///< the layer group that holds or last held it; -1 never allocated
    bool operator==(const PagedBlockState&) const = default;
};

/// Where a request of a serving session stands.
enum class PagedRequestPhase : std::uint8_t {
    Waiting = 0,
    Running = 1,
    Preempted = 2, ///< back in the waiting queue after a preemption
    Finished = 3,
    Last = Finished,
};

/// One request of a serving session. blockTables: one table per layer group (holes are the pool's
/// nullBlock); a finished request keeps the tables it had when it finished, a waiting or preempted one
/// has empty tables.
struct PagedRequestState {
    std::string id;
    PagedRequestPhase phase = PagedRequestPhase::Waiting;
    std::vector<std::vector<std::int32_t>> blockTables;
    std::int64_t numComputedTokens = 0;
    std::int64_t promptTokens = 0;
    std::int64_t cachedTokens = -1; ///< prefix hit at its first admission; -1 before it
    std::int32_t preemptions = 0;
    std::int64_t outputTokens = 0; ///< from RequestFinished
    bool operator==(const PagedRequestState&) const = default;
};

/// The block pool, free queue and requests of a serving session after a step, rebuilt from the paged events
/// alone (StateReducer; `kvscope-cli replay --step K` prints it as "paged"). active: the session has a
/// PagedPool event.
struct PagedState {
    bool active = false;
    std::int64_t blockSize = 0;
    std::int32_t numBlocks = 0;
    std::int32_t nullBlock = -1;
    bool prefixCaching = true;
    std::uint8_t freePolicy = 0;             ///< 0 document, 1 current
    std::vector<std::int64_t> groupWindows;  ///< per group: 0 full attention, else the window in tokens
    std::vector<std::int32_t> freeQueue;     ///< head first
    std::vector<PagedBlockState> blocks;     ///< indexed by block id
    std::vector<PagedRequestState> requests; ///< in arrival order
    std::int64_t evictions = 0;
    std::int64_t preemptions = 0;
    std::int64_t queryTokens = 0; ///< tokens looked up in the prefix cache at admissions
    std::int64_t hitTokens = 0;   ///< of which found
    bool operator==(const PagedState&) const = default;
};

} // namespace kvscope::trace
