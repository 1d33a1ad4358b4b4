// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace kvscope::trace {

/// The one description of each payload's binary record (sessions/FORMAT.md): its fields, in wire
/// order, as member pointers. EventCodec reads and writes every record from this list alone, so the two
/// directions cannot disagree; the static_asserts below fail the build when a struct gains a field that
/// its list does not name. (RenderDoc's single DoSerialise per struct is the model.)
template <typename Record> struct EventFields;

/// Fields a later minor appended to a record, in wire order. A reader takes each one only while the
/// event's body has bytes left, so a payload written by an older minor reads with these at their defaults.
/// Only event payloads have them: their body length bounds them (a snapshot's records have none).
template <typename Record> struct AppendedEventFields { static constexpr std::tuple<> list{}; };

#define KVSCOPE_EVENT_FIELDS(Record, ...)                                                                    \
    template <> struct EventFields<Record> { static constexpr auto list = std::make_tuple(__VA_ARGS__); }

KVSCOPE_EVENT_FIELDS(UpdateEvent, &UpdateEvent::tokensIn, &UpdateEvent::seqLength, &UpdateEvent::storedTokens,
                     &UpdateEvent::capacity, &UpdateEvent::returnedTokens, &UpdateEvent::bytes,
                     &UpdateEvent::layerType);
KVSCOPE_EVENT_FIELDS(MaskSizesEvent, &MaskSizesEvent::queryLength, &MaskSizesEvent::kvLength,
                     &MaskSizesEvent::kvOffset);
KVSCOPE_EVENT_FIELDS(WindowSlideEvent, &WindowSlideEvent::positionsEvicted, &WindowSlideEvent::windowStart,
                     &WindowSlideEvent::windowEnd, &WindowSlideEvent::windowSize);
KVSCOPE_EVENT_FIELDS(QuantizeFlushEvent, &QuantizeFlushEvent::tokensMoved,
                     &QuantizeFlushEvent::residualBefore, &QuantizeFlushEvent::residualAfter,
                     &QuantizeFlushEvent::quantizedTokensAfter, &QuantizeFlushEvent::bytesBefore,
                     &QuantizeFlushEvent::bytesAfter, &QuantizeFlushEvent::maxAbsError,
                     &QuantizeFlushEvent::meanAbsError, &QuantizeFlushEvent::relativeError);
KVSCOPE_EVENT_FIELDS(TransferEvent, &TransferEvent::direction, &TransferEvent::lane, &TransferEvent::timing,
                     &TransferEvent::beginNs, &TransferEvent::endNs, &TransferEvent::bytes);
KVSCOPE_EVENT_FIELDS(CropEvent, &CropEvent::maxLength, &CropEvent::seqLengthBefore,
                     &CropEvent::seqLengthAfter);
KVSCOPE_EVENT_FIELDS(ReorderEvent, &ReorderEvent::beamIndices);
KVSCOPE_EVENT_FIELDS(BatchRepeatEvent, &BatchRepeatEvent::repeats, &BatchRepeatEvent::batchBefore,
                     &BatchRepeatEvent::batchAfter);
KVSCOPE_EVENT_FIELDS(BatchSelectEvent, &BatchSelectEvent::indices, &BatchSelectEvent::batchBefore,
                     &BatchSelectEvent::batchAfter);
template <> struct EventFields<ResetEvent> { static constexpr std::tuple<> list{}; };
KVSCOPE_EVENT_FIELDS(MemoryEvent, &MemoryEvent::deviceFullPrecision, &MemoryEvent::deviceQuantized,
                     &MemoryEvent::host);
KVSCOPE_EVENT_FIELDS(StepBeginEvent, &StepBeginEvent::tokenId, &StepBeginEvent::text);
KVSCOPE_EVENT_FIELDS(StepEndEvent, &StepEndEvent::tokenId, &StepEndEvent::text, &StepEndEvent::wallNs);
KVSCOPE_EVENT_FIELDS(ComputeEvent, &ComputeEvent::timing, &ComputeEvent::beginNs, &ComputeEvent::endNs);
KVSCOPE_EVENT_FIELDS(LogitsEvent, &LogitsEvent::tokenIds, &LogitsEvent::logProbs, &LogitsEvent::complete);
KVSCOPE_EVENT_FIELDS(CompressionEvent, &CompressionEvent::lengthBefore, &CompressionEvent::lengthAfter,
                     &CompressionEvent::heads, &CompressionEvent::droppedCount,
                     &CompressionEvent::keptRecorded, &CompressionEvent::positions,
                     &CompressionEvent::droppedScores);
template <> struct AppendedEventFields<CompressionEvent> {
    // 1.3
    static constexpr auto list =
        std::make_tuple(&CompressionEvent::keptScores, &CompressionEvent::keptPerHead,
                        // 1.5
                        &CompressionEvent::prunedChannels,
                        // 1.7
                        &CompressionEvent::rotaryPositions);
};
// 1.4: paged serving.
KVSCOPE_EVENT_FIELDS(PagedPoolEvent, &PagedPoolEvent::blockSize, &PagedPoolEvent::numBlocks,
                     &PagedPoolEvent::nullBlock, &PagedPoolEvent::prefixCaching, &PagedPoolEvent::freePolicy,
                     &PagedPoolEvent::groupWindows, &PagedPoolEvent::maxNumBatchedTokens,
                     &PagedPoolEvent::maxNumSeqs);
KVSCOPE_EVENT_FIELDS(RequestArrivedEvent, &RequestArrivedEvent::requestId, &RequestArrivedEvent::promptTokens,
                     &RequestArrivedEvent::maxTokens);
KVSCOPE_EVENT_FIELDS(RequestAdmittedEvent, &RequestAdmittedEvent::requestId, &RequestAdmittedEvent::numTokens,
                     &RequestAdmittedEvent::cachedTokens, &RequestAdmittedEvent::resumed);
KVSCOPE_EVENT_FIELDS(RequestScheduledEvent, &RequestScheduledEvent::requestId,
                     &RequestScheduledEvent::firstPosition, &RequestScheduledEvent::numTokens,
                     &RequestScheduledEvent::samples);
KVSCOPE_EVENT_FIELDS(RequestPreemptedEvent, &RequestPreemptedEvent::requestId,
                     &RequestPreemptedEvent::numComputedTokens);
KVSCOPE_EVENT_FIELDS(RequestFinishedEvent, &RequestFinishedEvent::requestId, &RequestFinishedEvent::reason,
                     &RequestFinishedEvent::outputTokens);
KVSCOPE_EVENT_FIELDS(BlockAllocatedEvent, &BlockAllocatedEvent::requestId, &BlockAllocatedEvent::group,
                     &BlockAllocatedEvent::block, &BlockAllocatedEvent::tableIndex);
KVSCOPE_EVENT_FIELDS(BlockTouchedEvent, &BlockTouchedEvent::requestId, &BlockTouchedEvent::group,
                     &BlockTouchedEvent::block, &BlockTouchedEvent::tableIndex, &BlockTouchedEvent::refCnt);
KVSCOPE_EVENT_FIELDS(BlockCachedEvent, &BlockCachedEvent::requestId, &BlockCachedEvent::group,
                     &BlockCachedEvent::block, &BlockCachedEvent::hash, &BlockCachedEvent::parentHash,
                     &BlockCachedEvent::tokenBegin, &BlockCachedEvent::tokenEnd);
KVSCOPE_EVENT_FIELDS(BlockFreedEvent, &BlockFreedEvent::requestId, &BlockFreedEvent::group,
                     &BlockFreedEvent::block, &BlockFreedEvent::tableIndex, &BlockFreedEvent::refCnt,
                     &BlockFreedEvent::queuePosition, &BlockFreedEvent::windowed);
KVSCOPE_EVENT_FIELDS(BlockEvictedEvent, &BlockEvictedEvent::group, &BlockEvictedEvent::block,
                     &BlockEvictedEvent::hash);
KVSCOPE_EVENT_FIELDS(RequestTokensEvent, &RequestTokensEvent::requestId, &RequestTokensEvent::firstPosition,
                     &RequestTokensEvent::tokenIds, &RequestTokensEvent::text, &RequestTokensEvent::pieceEnds);
// 1.8: the channel error view.
KVSCOPE_EVENT_FIELDS(ChannelErrorEvent, &ChannelErrorEvent::heads, &ChannelErrorEvent::tokens,
                     &ChannelErrorEvent::keyError, &ChannelErrorEvent::keySize, &ChannelErrorEvent::valueError,
                     &ChannelErrorEvent::valueSize);
// 1.9: speculative decoding's draft, verification and rollback.
KVSCOPE_EVENT_FIELDS(SpeculationEvent, &SpeculationEvent::source, &SpeculationEvent::firstPosition,
                     &SpeculationEvent::draftIds, &SpeculationEvent::draftText, &SpeculationEvent::pieceEnds,
                     &SpeculationEvent::accepted, &SpeculationEvent::lengthsBefore, &SpeculationEvent::lengthsAfter);
// 1.10: an attached server's stream.
KVSCOPE_EVENT_FIELDS(ServerCacheEvent, &ServerCacheEvent::change, &ServerCacheEvent::hasParent,
                     &ServerCacheEvent::group, &ServerCacheEvent::blockHashes, &ServerCacheEvent::parentHash,
                     &ServerCacheEvent::tokenIds, &ServerCacheEvent::blockSize, &ServerCacheEvent::medium,
                     &ServerCacheEvent::text, &ServerCacheEvent::pieceEnds);
KVSCOPE_EVENT_FIELDS(ServerStatusEvent, &ServerStatusEvent::messageSequence, &ServerStatusEvent::serverTime,
                     &ServerStatusEvent::replayed, &ServerStatusEvent::messages, &ServerStatusEvent::lostMessages,
                     &ServerStatusEvent::refusedMessages, &ServerStatusEvent::prefixCacheQueries,
                     &ServerStatusEvent::prefixCacheHits);
KVSCOPE_EVENT_FIELDS(LayerState, &LayerState::initialized, &LayerState::kind, &LayerState::seqLength,
                     &LayerState::storedTokens, &LayerState::capacity, &LayerState::returnedTokens,
                     &LayerState::lastUpdateStep, &LayerState::queryLength, &LayerState::kvLength,
                     &LayerState::kvOffset, &LayerState::windowStart, &LayerState::windowEnd,
                     &LayerState::windowSize, &LayerState::evictedTokens, &LayerState::residualTokens,
                     &LayerState::quantizedTokens, &LayerState::lastFlushStep,
                     &LayerState::lastFlushRelativeError, &LayerState::residency, &LayerState::bytesDevice,
                     &LayerState::bytesDeviceQuantized, &LayerState::bytesHost, &LayerState::batchSize);
// The snapshot's layers go last: a reader bounds their count by the bytes that remain.
KVSCOPE_EVENT_FIELDS(StepState, &StepState::step, &StepState::memoryDeviceFullPrecision,
                     &StepState::memoryDeviceQuantized, &StepState::memoryHost, &StepState::inputTokenId,
                     &StepState::inputText, &StepState::tokenId, &StepState::tokenText, &StepState::wallNs,
                     &StepState::layers);

#undef KVSCOPE_EVENT_FIELDS

namespace detail {

/// Converts to any member type, to count an aggregate's members by how many initializers it takes.
struct AnyMember {
    template <typename T> constexpr operator T&() const&& noexcept;
    template <typename T> constexpr operator T&&() const&& noexcept;
};

template <typename Record, typename... Members> constexpr std::size_t memberCount() {
    if constexpr (requires { Record{Members{}..., AnyMember{}}; }) {
        return memberCount<Record, Members..., AnyMember>();
    } else {
        return sizeof...(Members);
    }
}

} // namespace detail

/// Members a record keeps out of the wire on purpose: StepState::paged and StepState::server, rebuilt from
/// events, stay out of snapshots so that a 1.4 snapshot has the 1.3 layout (older readers refuse bytes after a
/// snapshot).
template <typename Record> struct UnrecordedMemberCount { static constexpr std::size_t value = 0; };
template <> struct UnrecordedMemberCount<StepState> { static constexpr std::size_t value = 2; };

/// Whether a record's field list names every data member it has.
template <typename Record> constexpr bool listsEveryMember() {
    return std::tuple_size_v<std::remove_const_t<decltype(EventFields<Record>::list)>> +
               std::tuple_size_v<std::remove_const_t<decltype(AppendedEventFields<Record>::list)>> +
               UnrecordedMemberCount<Record>::value ==
           detail::memberCount<Record>();
}

template <typename... Payloads> constexpr bool listsEveryMemberOfEach(std::variant<Payloads...>*) {
    return (listsEveryMember<Payloads>() && ...);
}

static_assert(listsEveryMemberOfEach(static_cast<EventPayload*>(nullptr)),
              "an event payload has a field its EventFields list does not name: it would not be written");
static_assert(listsEveryMember<LayerState>() && listsEveryMember<StepState>(),
              "a snapshot record has a field its EventFields list does not name: it would not be written");

} // namespace kvscope::trace
