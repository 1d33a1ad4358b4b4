// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kvscope::paged {

/// Where freed blocks go (docs/paged.md). Document: vLLM's design document prefix_caching.md, the
/// default: no null block, a finished request's blocks to the tail of the free queue in reverse order.
/// Current: vLLM's code today: block 0 is reserved as the null block (holes in sliding-window tables),
/// freed blocks without a hash go to the head of the free queue (reused first), cached ones to the tail.
enum class FreePolicy : std::uint8_t {
    Document = 0,
    Current = 1,
    Last = Current,
};

/// The attention of a layer group: full attention keeps every block; a sliding window of W tokens frees
/// the blocks that fall wholly out of the window.
enum class GroupKind : std::uint8_t {
    Full = 0,
    Sliding = 1,
    Last = Sliding,
};

/// How full blocks' prefix hashes are computed (BlockHasher): kvscope's FNV-1a, stable and fast (the
/// default), or vLLM's `--prefix-caching-hash-algo sha256_cbor`, whose hashes equal a vLLM server's.
enum class HashAlgorithm : std::uint8_t {
    Fnv1a = 0,
    Sha256Cbor = 1,
    Last = Sha256Cbor,
};

/// Layers that share one block table per request (vLLM's KV cache group, Transformers' layer group).
struct LayerGroup {
    GroupKind kind = GroupKind::Full;
    std::int64_t window = 0;          ///< Sliding: the window in tokens (>= 1); Full: 0
    std::vector<std::int32_t> layers; ///< model layer indices (informational for the bookkeeping)
    bool operator==(const LayerGroup&) const = default;
};

/// Everything the block pool, the cache manager and the scheduler are configured with.
struct PagedConfig {
    std::int64_t blockSize = 16; ///< token slots per block
    std::int32_t numBlocks = 64; ///< blocks in the pool, shared by all groups (Current reserves block 0)
    bool prefixCaching = true;
    FreePolicy freePolicy = FreePolicy::Document;
    HashAlgorithm hashAlgorithm = HashAlgorithm::Fnv1a;
    std::int64_t maxNumBatchedTokens = 256; ///< a step's token budget
    std::int32_t maxNumSeqs = 8;            ///< most requests running at once
    /// Most tokens (prompt + output) one request may reach; 0 = unbounded. A request that reaches it
    /// finishes (vLLM's max_model_len stop).
    std::int64_t maxModelLen = 0;
    std::vector<LayerGroup> groups{LayerGroup{}}; ///< one full-attention group by default

    /// Throws PagedError naming the first bad field, the allowed values and the fix.
    void validate() const;
    /// The pool and scheduler a serving run's settings ask for (one full-attention group; the model's
    /// groups are set by the serving loop), validated: throws PagedError naming the bad setting.
    static PagedConfig fromSettings(const config::ServingSettings& serving);
    bool operator==(const PagedConfig&) const = default;
};

std::string_view toString(FreePolicy policy);
std::string_view toString(GroupKind kind);
std::string_view toString(HashAlgorithm algorithm);
std::optional<HashAlgorithm> hashAlgorithmFromString(std::string_view name);
/// The names hashAlgorithmFromString reads: "fnv1a, sha256_cbor".
std::string_view allowedHashAlgorithms();
std::optional<FreePolicy> freePolicyFromString(std::string_view name);
/// The names freePolicyFromString reads, for messages and help: "document, current".
std::string_view allowedFreePolicies();

} // namespace kvscope::paged
