// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::paged {

/// One request's work in a step: compute the KV of tokenIds at positions firstPosition.., reading and
/// writing through its block tables. Positions before firstPosition are already in the blocks (computed in
/// earlier steps or found in the prefix cache).
struct ScheduledRequest {
    std::string requestId;
    std::vector<TokenId> tokenIds;
    std::int64_t firstPosition = 0;
    /// Per layer group, the table after this step's allocation; entry i holds positions
    /// [i * blockSize, (i + 1) * blockSize). Holes (out of a sliding window) are the pool's null block:
    /// 0 under FreePolicy::Current, kNoBlock (-1) under Document; they are never read.
    std::vector<std::vector<BlockId>> blockTables;
    /// The step computes the request's last known token, so its logits sample the next token (a chunk of a
    /// longer prompt does not).
    bool samples = false;
    /// Admitted this step (new, or resumed after a preemption); cachedTokens were found in the prefix
    /// cache at the admission (= firstPosition).
    bool admitted = false;
    std::int64_t cachedTokens = 0;
};

/// What one scheduler step decided (vLLM's SchedulerOutput): running requests first, in running order,
/// then those admitted from the waiting queue.
struct SchedulerOutput {
    std::int64_t step = 0;
    std::vector<ScheduledRequest> requests;
    std::vector<std::string> preempted; ///< in preemption order
    std::int64_t numScheduledTokens() const {
        std::int64_t total = 0;
        for (const auto& request : requests)
            total += static_cast<std::int64_t>(request.tokenIds.size());
        return total;
    }
};

} // namespace kvscope::paged
