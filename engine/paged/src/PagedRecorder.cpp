// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/PagedRecorder.h"

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventEmitter.h"

#include <string>

namespace kvscope::paged {

void PagedRecorder::setStep(std::int64_t step) {
    if (m_emitter != nullptr)
        m_emitter->setStep(step);
}

void PagedRecorder::pool(const PagedConfig& config, BlockId nullBlock) {
    if (m_emitter == nullptr)
        return;
    trace::PagedPoolEvent e;
    e.blockSize = config.blockSize;
    e.numBlocks = config.numBlocks;
    e.nullBlock = nullBlock;
    e.prefixCaching = config.prefixCaching;
    e.freePolicy = static_cast<std::uint8_t>(config.freePolicy);
    for (const LayerGroup& group : config.groups)
        e.groupWindows.push_back(group.kind == GroupKind::Full ? 0 : group.window);
    e.maxNumBatchedTokens = config.maxNumBatchedTokens;
    e.maxNumSeqs = config.maxNumSeqs;
    m_emitter->emit(-1, std::move(e));
}

void PagedRecorder::arrived(std::string_view request, std::int64_t promptTokens, std::int64_t maxTokens) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::RequestArrivedEvent{std::string(request), promptTokens, maxTokens});
}

void PagedRecorder::admitted(std::string_view request, std::int64_t numTokens, std::int64_t cachedTokens,
                             bool resumed) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1,
                        trace::RequestAdmittedEvent{std::string(request), numTokens, cachedTokens, resumed});
}

void PagedRecorder::scheduled(std::string_view request, std::int64_t firstPosition, std::int64_t numTokens,
                              bool samples) {
    if (m_emitter != nullptr)
        m_emitter->emit(
            -1, trace::RequestScheduledEvent{std::string(request), firstPosition, numTokens, samples});
}

void PagedRecorder::preempted(std::string_view request, std::int64_t numComputedTokens) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::RequestPreemptedEvent{std::string(request), numComputedTokens});
}

void PagedRecorder::finished(std::string_view request, trace::FinishReason reason,
                             std::int64_t outputTokens) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::RequestFinishedEvent{std::string(request), reason, outputTokens});
}

void PagedRecorder::allocated(std::string_view request, std::int32_t group, BlockId block,
                              std::int32_t tableIndex) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::BlockAllocatedEvent{std::string(request), group, block, tableIndex});
}

void PagedRecorder::touched(std::string_view request, std::int32_t group, BlockId block,
                            std::int32_t tableIndex, std::int32_t refCnt) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::BlockTouchedEvent{std::string(request), group, block, tableIndex, refCnt});
}

void PagedRecorder::cached(std::string_view request, std::int32_t group, BlockId block, HashValue hash,
                           HashValue parent, std::int64_t tokenBegin, std::int64_t tokenEnd) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::BlockCachedEvent{std::string(request), group, block, hash, parent,
                                                    tokenBegin, tokenEnd});
}

void PagedRecorder::freed(std::string_view request, std::int32_t group, BlockId block,
                          std::int32_t tableIndex, std::int32_t refCnt, std::int32_t queuePosition,
                          bool windowed) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::BlockFreedEvent{std::string(request), group, block, tableIndex, refCnt,
                                                   queuePosition, windowed});
}

void PagedRecorder::evicted(std::int32_t group, BlockId block, HashValue hash) {
    if (m_emitter != nullptr)
        m_emitter->emit(-1, trace::BlockEvictedEvent{group, block, hash});
}

void PagedRecorder::tokens(std::string_view request, std::int64_t firstPosition, std::span<const TokenId> ids) {
    if (m_emitter == nullptr)
        return;
    trace::RequestTokensEvent e;
    e.requestId = std::string(request);
    e.firstPosition = firstPosition;
    e.tokenIds.assign(ids.begin(), ids.end());
    if (m_pieceOf) {
        for (const TokenId id : ids) {
            e.text += m_pieceOf(id);
            e.pieceEnds.push_back(static_cast<std::int64_t>(e.text.size()));
        }
    }
    m_emitter->emit(-1, std::move(e));
}

} // namespace kvscope::paged
