// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/PagedHistory.h"

#include <cstdint>
#include <string>

namespace kvscope::gui {

/// A serving session's numbers as compare mode puts them side by side (the same as `kvscope-cli serve`'s
/// summary): steps to finish, prefix hit rate, preemptions, evictions, peak pool usage. Read from the
/// session's events through PagedHistory, so a live session, its replay and a session file read alike.
/// Qt-free.
class ServingSummary {
public:
    std::int64_t steps = 0;       ///< steps recorded (to finish, once finished)
    bool finished = false;        ///< every request that arrived has finished
    std::int32_t requests = 0;    ///< requests that arrived
    std::int64_t queryTokens = 0; ///< looked up in the prefix cache at admissions
    std::int64_t hitTokens = 0;   ///< of which found
    std::int64_t preemptions = 0;
    std::int64_t evictions = 0;
    std::int32_t peakBlocksUsed = 0;
    std::int32_t numBlocks = 0;

    /// hitTokens / queryTokens (0 before any admission), as SchedulerStats::prefixHitRate.
    double prefixHitRate() const;
    /// The summary of steps [0, lastStep] (every step when lastStep is negative or past the end); an
    /// inactive history (not a serving session) gives all zeros.
    static ServingSummary of(const PagedHistory& history, std::int64_t lastStep = -1);
    /// The pool a session was served with, in words: "64 blocks of 16 tokens, prefix caching on, budget 256
    /// tokens, 8 running at most, free policy document".
    static std::string describePool(const trace::PagedPoolEvent& pool);
};

} // namespace kvscope::gui
