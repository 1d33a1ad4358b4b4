// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvscope::trace {

/// One block an attached server holds in its prefix cache, as its stream said when it stored it.
struct ServerBlockState {
    std::uint64_t hash = 0;
    bool hasParent = false; ///< false: the first block of a prompt
    std::uint64_t parentHash = 0;
    std::vector<std::int64_t> tokenIds;
    std::string text; ///< the tokens' text; empty without a tokenizer
    std::string medium;
    std::int32_t group = 0;
    std::int64_t storedStep = 0;
    std::int64_t storedIndex = 0; ///< storedBlocks before it: the order blocks were stored in
    bool operator==(const ServerBlockState&) const = default;
};

/// An attached server's prefix cache after a step, rebuilt from its ServerCache and ServerStatus events alone
/// (ServerCacheStateReducer; `kvscope-cli replay --step K` prints it as "server"). active: the session has
/// such events. Blocks are keyed by (medium, hash): a block offloaded to the CPU is stored there too.
struct ServerCacheState {
    bool active = false;
    std::map<std::pair<std::string, std::uint64_t>, ServerBlockState> blocks;
    std::int64_t storedBlocks = 0;  ///< every block stored so far
    std::int64_t removedBlocks = 0; ///< every block removed so far (Cleared not counted)
    std::int64_t clears = 0;
    /// From the last ServerStatus event.
    std::uint64_t messageSequence = 0;
    double serverTime = 0;
    std::int64_t messages = 0;
    std::int64_t lostMessages = 0;
    std::int64_t refusedMessages = 0;
    std::int64_t prefixCacheQueries = -1;
    std::int64_t prefixCacheHits = -1;
    bool operator==(const ServerCacheState&) const = default;
};

} // namespace kvscope::trace
