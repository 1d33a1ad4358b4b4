// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/PagedState.h"

namespace kvscope::trace {

/// How the paged-serving events change a PagedState (StateReducer hands them here). Rules:
///   PagedPool         resets the state: numBlocks blocks, free queue 0..N-1 without the null block.
///   RequestArrived    a Waiting request (promptTokens).
///   RequestAdmitted   Running; numComputedTokens = cachedTokens; the first admission sets cachedTokens;
///                     queryTokens += numTokens, hitTokens += cachedTokens.
///   RequestScheduled  numComputedTokens = firstPosition + numTokens.
///   RequestPreempted  Preempted, tables cleared, numComputedTokens 0, preemptions + 1.
///   RequestFinished   Finished (tables kept as they were), outputTokens.
///   BlockAllocated    the block leaves the free queue, refCnt 1, group; table[tableIndex] = block (a table
///                     grows with null-block holes up to tableIndex).
///   BlockTouched      leaves the free queue if it was in it; refCnt from the event; table[tableIndex].
///   BlockCached       the block holds hash.
///   BlockFreed        refCnt from the event; queuePosition >= 0 inserts it there; windowed: its table slot
///                     becomes the null block.
///   BlockEvicted      the block holds no hash; evictions + 1.
/// Events that name an unknown block or request are ignored (a damaged or truncated session replays as far
/// as it makes sense); positions past the queue's end append.
class PagedStateReducer {
public:
    static void apply(PagedState& state, const Event& event);
};

} // namespace kvscope::trace
