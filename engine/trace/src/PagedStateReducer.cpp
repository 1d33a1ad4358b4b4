// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/PagedStateReducer.h"

#include <algorithm>
#include <variant>

namespace kvscope::trace {

namespace {

PagedRequestState* findRequest(PagedState& state, const std::string& id) {
    // Searched from the back: the requests of a step are mostly the recent ones.
    for (auto it = state.requests.rbegin(); it != state.requests.rend(); ++it) {
        if (it->id == id)
            return &*it;
    }
    return nullptr;
}

PagedBlockState* findBlock(PagedState& state, std::int32_t id) {
    if (id < 0 || static_cast<std::size_t>(id) >= state.blocks.size())
        return nullptr;
    return &state.blocks[static_cast<std::size_t>(id)];
}

void leaveQueue(PagedState& state, std::int32_t block) {
    // The head is the common case (allocation); a touch removes from the middle.
    auto& queue = state.freeQueue;
    if (!queue.empty() && queue.front() == block) {
        queue.erase(queue.begin());
        return;
    }
    const auto it = std::find(queue.begin(), queue.end(), block);
    if (it != queue.end())
        queue.erase(it);
}

void placeInTable(PagedState& state, PagedRequestState& request, std::int32_t group, std::int32_t tableIndex,
                  std::int32_t block) {
    if (group < 0 || tableIndex < 0)
        return;
    if (request.blockTables.size() <= static_cast<std::size_t>(group))
        request.blockTables.resize(static_cast<std::size_t>(group) + 1);
    auto& table = request.blockTables[static_cast<std::size_t>(group)];
    if (table.size() <= static_cast<std::size_t>(tableIndex))
        table.resize(static_cast<std::size_t>(tableIndex) + 1, state.nullBlock);
    table[static_cast<std::size_t>(tableIndex)] = block;
}

struct PagedFolder {
    PagedState& state;

    void operator()(const PagedPoolEvent& e) const {
        state = PagedState{};
        state.active = true;
        state.blockSize = e.blockSize;
        state.numBlocks = std::max(0, e.numBlocks);
        state.nullBlock = e.nullBlock;
        state.prefixCaching = e.prefixCaching;
        state.freePolicy = e.freePolicy;
        state.groupWindows = e.groupWindows;
        state.blocks.resize(static_cast<std::size_t>(state.numBlocks));
        state.freeQueue.reserve(static_cast<std::size_t>(state.numBlocks));
        for (std::int32_t id = 0; id < state.numBlocks; ++id) {
            state.blocks[static_cast<std::size_t>(id)].id = id;
            if (id != e.nullBlock)
                state.freeQueue.push_back(id);
        }
    }

    void operator()(const RequestArrivedEvent& e) const {
        PagedRequestState request;
        request.id = e.requestId;
        request.promptTokens = e.promptTokens;
        request.blockTables.resize(state.groupWindows.size());
        state.requests.push_back(std::move(request));
    }

    void operator()(const RequestAdmittedEvent& e) const {
        PagedRequestState* request = findRequest(state, e.requestId);
        if (request == nullptr)
            return;
        request->phase = PagedRequestPhase::Running;
        request->numComputedTokens = e.cachedTokens;
        if (request->cachedTokens < 0)
            request->cachedTokens = e.cachedTokens;
        state.queryTokens += e.numTokens;
        state.hitTokens += e.cachedTokens;
    }

    void operator()(const RequestScheduledEvent& e) const {
        if (PagedRequestState* request = findRequest(state, e.requestId))
            request->numComputedTokens = e.firstPosition + e.numTokens;
    }

    void operator()(const RequestPreemptedEvent& e) const {
        PagedRequestState* request = findRequest(state, e.requestId);
        if (request == nullptr)
            return;
        request->phase = PagedRequestPhase::Preempted;
        request->numComputedTokens = 0;
        for (auto& table : request->blockTables)
            table.clear();
        ++request->preemptions;
        ++state.preemptions;
    }

    void operator()(const RequestFinishedEvent& e) const {
        if (PagedRequestState* request = findRequest(state, e.requestId)) {
            request->phase = PagedRequestPhase::Finished;
            request->outputTokens = e.outputTokens;
        }
    }

    void operator()(const BlockAllocatedEvent& e) const {
        PagedBlockState* block = findBlock(state, e.block);
        if (block == nullptr)
            return;
        leaveQueue(state, e.block);
        block->refCnt = 1;
        block->group = e.group;
        if (PagedRequestState* request = findRequest(state, e.requestId))
            placeInTable(state, *request, e.group, e.tableIndex, e.block);
    }

    void operator()(const BlockTouchedEvent& e) const {
        PagedBlockState* block = findBlock(state, e.block);
        if (block == nullptr)
            return;
        if (block->refCnt == 0)
            leaveQueue(state, e.block);
        block->refCnt = e.refCnt;
        block->group = e.group;
        if (PagedRequestState* request = findRequest(state, e.requestId))
            placeInTable(state, *request, e.group, e.tableIndex, e.block);
    }

    void operator()(const BlockCachedEvent& e) const {
        if (PagedBlockState* block = findBlock(state, e.block)) {
            block->cached = true;
            block->hash = e.hash;
            block->group = e.group;
        }
    }

    void operator()(const BlockFreedEvent& e) const {
        PagedBlockState* block = findBlock(state, e.block);
        if (block == nullptr)
            return;
        block->refCnt = e.refCnt;
        if (e.queuePosition >= 0) {
            auto& queue = state.freeQueue;
            const auto position = std::min(static_cast<std::size_t>(e.queuePosition), queue.size());
            queue.insert(queue.begin() + static_cast<std::ptrdiff_t>(position), e.block);
        }
        if (e.windowed) {
            if (PagedRequestState* request = findRequest(state, e.requestId))
                placeInTable(state, *request, e.group, e.tableIndex, state.nullBlock);
        }
    }

    void operator()(const BlockEvictedEvent& e) const {
        if (PagedBlockState* block = findBlock(state, e.block)) {
            block->cached = false;
            block->hash = 0;
        }
        ++state.evictions;
    }

    template <typename Other> void operator()(const Other&) const {}
};

} // namespace

void PagedStateReducer::apply(PagedState& state, const Event& event) {
    if (!isPagedKind(event.kind()))
        return;
    if (!state.active && event.kind() != EventKind::PagedPool)
        return; // no pool configured yet: nothing to place the event in
    std::visit(PagedFolder{state}, event.payload);
}

} // namespace kvscope::trace
