// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/ServerCacheState.h"

namespace kvscope::trace {

/// How an attached server's events change a ServerCacheState (StateReducer hands them here). Rules:
///   ServerCache Stored   each hash holds its blockSize tokens (and their text) under the hash before it (the
///                        first under parentHash), in `medium`; storedBlocks + 1 per hash. A stored block the
///                        state already holds is replaced (a server stores again what it recomputed).
///   ServerCache Removed  each hash leaves `medium`; removedBlocks + 1 per hash it held.
///   ServerCache Cleared  no blocks; clears + 1.
///   ServerStatus         the stream's counters and the server's metrics, as given.
/// Either makes the state active. Tokens short of a whole block leave the block's tokens short (a damaged
/// event replays as far as it makes sense).
class ServerCacheStateReducer {
public:
    static void apply(ServerCacheState& state, const Event& event);
};

} // namespace kvscope::trace
