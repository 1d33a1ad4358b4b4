// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedTypes.h"
#include "kvscope/paged/Sha256.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kvscope::paged {

struct Request;

/// Chains the prefix hashes of a request's full blocks with the pool's algorithm: kvscope's FNV-1a
/// (BlockHash) or vLLM's `sha256_cbor`, SHA-256 of the canonical CBOR of (parent digest, the block's token
/// ids, extra keys) with the parent of the first block SHA-256 of CBOR "vllm-none-hash" and the extra keys
/// `(("cache_salt", salt),)` on a salted request's first block, null otherwise. A sha256_cbor block's
/// HashValue is its digest's low 64 bits read big-endian: the integer vLLM's KV events publish.
class BlockHasher {
public:
    explicit BlockHasher(HashAlgorithm algorithm = HashAlgorithm::Fnv1a) : m_algorithm(algorithm) {}

    /// Appends to request.blockHashes (and, for sha256_cbor, request.blockDigests) the hashes of its full
    /// blocks of blockSize tokens that have none yet.
    void extend(Request& request, std::int64_t blockSize) const;
    /// The hashes of the request's first `numBlocks` full blocks, recomputed from its tokens.
    std::vector<HashValue> chain(const Request& request, std::int64_t blockSize, std::int64_t numBlocks) const;
    /// The parent a first block is recorded with.
    HashValue noneHash() const;

    /// vLLM's NONE_HASH under sha256_cbor with no PYTHONHASHSEED.
    static const Sha256::Digest& sha256CborNone();
    static Sha256::Digest sha256Cbor(const Sha256::Digest& parent, std::span<const TokenId> tokens,
                                     std::string_view cacheSalt);
    /// The digest's last 8 bytes, big-endian (vLLM's VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1, its default).
    static HashValue low64(const Sha256::Digest& digest);

private:
    HashAlgorithm m_algorithm;
};

} // namespace kvscope::paged
