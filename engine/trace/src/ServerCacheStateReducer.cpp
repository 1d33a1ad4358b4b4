// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/ServerCacheStateReducer.h"

#include <algorithm>

namespace kvscope::trace {

namespace {

/// The text of tokens [first, last) from a piece list (RequestTokens' layout); empty when it does not fit.
std::string piecesText(const ServerCacheEvent& event, std::size_t first, std::size_t last) {
    if (event.pieceEnds.size() != event.tokenIds.size() || last == 0 || last > event.pieceEnds.size()) {
        return {};
    }
    const std::int64_t begin = first == 0 ? 0 : event.pieceEnds[first - 1];
    const std::int64_t end = event.pieceEnds[last - 1];
    if (begin < 0 || end < begin || static_cast<std::size_t>(end) > event.text.size()) {
        return {};
    }
    return event.text.substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
}

void store(ServerCacheState& state, const ServerCacheEvent& event, std::int64_t step) {
    bool hasParent = event.hasParent;
    std::uint64_t parent = event.parentHash;
    const std::size_t blockSize = event.blockSize > 0 ? static_cast<std::size_t>(event.blockSize) : 0;
    for (std::size_t i = 0; i < event.blockHashes.size(); ++i) {
        ServerBlockState block;
        block.hash = event.blockHashes[i];
        block.hasParent = hasParent;
        block.parentHash = parent;
        const std::size_t first = std::min(i * blockSize, event.tokenIds.size());
        const std::size_t last = std::min(first + blockSize, event.tokenIds.size());
        block.tokenIds.assign(event.tokenIds.begin() + static_cast<std::ptrdiff_t>(first),
                              event.tokenIds.begin() + static_cast<std::ptrdiff_t>(last));
        block.text = piecesText(event, first, last);
        block.medium = event.medium;
        block.group = event.group;
        block.storedStep = step;
        block.storedIndex = state.storedBlocks;
        state.blocks[{event.medium, block.hash}] = std::move(block);
        ++state.storedBlocks;
        hasParent = true;
        parent = event.blockHashes[i];
    }
}

} // namespace

void ServerCacheStateReducer::apply(ServerCacheState& state, const Event& event) {
    if (const auto* cache = std::get_if<ServerCacheEvent>(&event.payload)) {
        state.active = true;
        switch (cache->change) {
        case ServerCacheChange::Stored:
            store(state, *cache, event.step);
            break;
        case ServerCacheChange::Removed:
            for (const std::uint64_t hash : cache->blockHashes) {
                state.removedBlocks += static_cast<std::int64_t>(state.blocks.erase({cache->medium, hash}));
            }
            break;
        case ServerCacheChange::Cleared:
            state.blocks.clear();
            ++state.clears;
            break;
        }
    } else if (const auto* status = std::get_if<ServerStatusEvent>(&event.payload)) {
        state.active = true;
        state.messageSequence = status->messageSequence;
        state.serverTime = status->serverTime;
        state.messages = status->messages;
        state.lostMessages = status->lostMessages;
        state.refusedMessages = status->refusedMessages;
        state.prefixCacheQueries = status->prefixCacheQueries;
        state.prefixCacheHits = status->prefixCacheHits;
    }
}

} // namespace kvscope::trace
