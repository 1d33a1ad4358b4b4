// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::paged {

/// One event of a KV cache's prefix-cache stream with vLLM's fields (vllm/distributed/kv_events.py):
/// blocks stored (hashed full blocks, one event per caching call), removed (evicted), or all cleared. What
/// kvscope's own pool publishes (KvEventSink) and what a server's stream decodes to.
struct KvCacheEvent {
    enum class Type : std::uint8_t { BlockStored, BlockRemoved, AllBlocksCleared };
    Type type = Type::BlockStored;
    std::vector<HashValue> blockHashes;
    std::optional<HashValue> parentBlockHash; ///< BlockStored: the block before the first; none for a first block
    std::vector<TokenId> tokenIds;            ///< BlockStored: every stored block's tokens, in order
    std::int64_t blockSize = 0;               ///< BlockStored
    /// BlockStored: per stored block its cache salt ("" = none: vLLM's null extra key).
    std::vector<std::string> cacheSalts;
    std::string medium = "GPU"; ///< where the blocks live: GPU, CPU, FS, OBJ (vLLM); CPU_PINNED, DISK, EXTERNAL (SGLang)
    std::int32_t groupIdx = 0;  ///< the KV cache group (layer group)
    /// BlockStored: the group's attention ("full_attention", "sliding_window"), and its window.
    std::string specKind;
    std::optional<std::int64_t> slidingWindow;
    bool operator==(const KvCacheEvent&) const = default;
};

/// Where a pool publishes its KvCacheEvents, in the order they happen.
class KvEventSink {
public:
    virtual ~KvEventSink() = default;
    virtual void publish(const KvCacheEvent& event) = 0;
};

} // namespace kvscope::paged
