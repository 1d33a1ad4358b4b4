// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::paged {

/// Token ids as the models take them.
using TokenId = std::int64_t;
/// A block's index in the pool: 0 .. numBlocks - 1.
using BlockId = std::int32_t;
/// A 64-bit prefix hash (BlockHash).
using HashValue = std::uint64_t;

/// "No block": a hole in a sliding-window table under the document policy (which has no null block),
/// and the end of the free queue's links.
inline constexpr BlockId kNoBlock = -1;

} // namespace kvscope::paged
