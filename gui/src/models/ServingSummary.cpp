// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/ServingSummary.h"

#include <algorithm>

namespace kvscope::gui {

double ServingSummary::prefixHitRate() const {
    return queryTokens > 0 ? static_cast<double>(hitTokens) / static_cast<double>(queryTokens) : 0.0;
}

ServingSummary ServingSummary::of(const PagedHistory& history, std::int64_t lastStep) {
    ServingSummary summary;
    if (!history.active() || history.stepCount() == 0) {
        return summary;
    }
    const std::int64_t last =
        lastStep < 0 ? history.stepCount() - 1 : std::min(lastStep, history.stepCount() - 1);
    summary.steps = last + 1;
    summary.numBlocks = history.pool().numBlocks;
    for (std::int64_t step = 0; step <= last; ++step) {
        const PagedHistory::StepMetrics& metrics = history.metrics(step);
        summary.preemptions += metrics.preemptions;
        summary.evictions += metrics.evictions;
        summary.peakBlocksUsed =
            std::max({summary.peakBlocksUsed, metrics.usedBlocks, metrics.scheduledBlocks});
    }
    summary.queryTokens = history.metrics(last).totalQueryTokens;
    summary.hitTokens = history.metrics(last).totalHitTokens;
    summary.finished = true;
    for (const std::string& id : history.requestIds()) {
        if (history.lane(id, last).phase == PagedHistory::Phase::Absent) {
            continue; // arrives later
        }
        ++summary.requests;
        const std::int64_t finished = history.finishedStep(id);
        summary.finished = summary.finished && finished >= 0 && finished <= last;
    }
    summary.finished = summary.finished && summary.requests > 0;
    return summary;
}

std::string ServingSummary::describePool(const trace::PagedPoolEvent& pool) {
    return std::to_string(pool.numBlocks) + " blocks of " + std::to_string(pool.blockSize) +
           " tokens, prefix caching " + (pool.prefixCaching ? "on" : "off") + ", budget " +
           std::to_string(pool.maxNumBatchedTokens) + " tokens, " + std::to_string(pool.maxNumSeqs) +
           " running at most, free policy " + (pool.freePolicy == 1 ? "current" : "document");
}

} // namespace kvscope::gui
