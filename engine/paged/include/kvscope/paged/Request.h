// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::paged {

/// Where a request stands in the scheduler.
enum class RequestState : std::uint8_t {
    Pending = 0, ///< before its arrival step
    Waiting = 1,
    Running = 2,
    Preempted = 3, ///< waiting again after a preemption
    Finished = 4,
};

/// One generation request of a serving workload and its progress (vLLM's Request). Its tokens are the
/// prompt followed by the outputs; the KV of a sampled token is computed in the next step, so the last
/// output's KV never is.
struct Request {
    std::string id;
    std::int64_t arrivalStep = 0;
    std::vector<TokenId> promptIds;
    std::int64_t maxTokens = 16;
    bool ignoreEos = false;
    std::string cacheSalt; ///< extra key of the first block's hash: only equal salts share a prefix

    std::vector<TokenId> outputIds;
    std::int64_t numComputedTokens = 0; ///< tokens whose KV is in the blocks (after this step's schedule)
    RequestState state = RequestState::Pending;
    std::int32_t preemptions = 0;
    std::int64_t cachedTokens = -1; ///< prefix hit at its first admission; -1 before it
    std::int64_t firstTokenStep = -1;
    std::int64_t finishedStep = -1;
    /// Per layer group, its block table when it finished (empty before).
    std::vector<std::vector<BlockId>> finalBlockTables;
    /// Prefix hashes of its full blocks so far (filled by the cache manager, kept across preemptions).
    std::vector<HashValue> blockHashes;
    /// Under sha256_cbor, the full digests blockHashes are the low 64 bits of (each block's parent is hashed
    /// whole); empty under FNV-1a.
    std::vector<std::array<std::uint8_t, 32>> blockDigests;

    std::int64_t numPromptTokens() const { return static_cast<std::int64_t>(promptIds.size()); }
    std::int64_t numTokens() const { return numPromptTokens() + static_cast<std::int64_t>(outputIds.size()); }
    TokenId tokenAt(std::int64_t position) const {
        return position < numPromptTokens()
                   ? promptIds[static_cast<std::size_t>(position)]
                   : outputIds[static_cast<std::size_t>(position - numPromptTokens())];
    }
    bool isFinished() const { return state == RequestState::Finished; }
};

} // namespace kvscope::paged
