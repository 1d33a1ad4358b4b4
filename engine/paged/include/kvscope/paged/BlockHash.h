// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <span>
#include <string_view>

namespace kvscope::paged {

/// The prefix hash of a full block: hash(parent hash, the block's token ids, extra keys), as vLLM's
/// hash_block_tokens; a block is identified by its own tokens and, through the parent, every token
/// before it. The first block's parent is kNoneHash, and its extra key is the request's cache_salt.
///
/// The function (stable across runs and machines, so sessions can be compared): 64-bit FNV-1a over the
/// little-endian bytes of parent (8), the token count (8), each token id (8 each), the extra key's
/// length (8) and its bytes, then the splitmix64 finalizer to spread the bits. Not cryptographic.
class BlockHash {
public:
    /// The parent of the first block: FNV-1a 64 of the ASCII text "kvscope.paged.none".
    static const HashValue kNoneHash;

    static HashValue of(HashValue parent, std::span<const TokenId> tokens, std::string_view extraKey = {});
};

} // namespace kvscope::paged
