// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerKind.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvscope::trace {

/// Payloads are plain aggregates of fixed-width fields so that they copy cheaply and serialise
/// field by field. Token counts and byte counts are int64_t throughout; -1 means "none/unbounded"
/// where a field says so.

enum class TransferDirection : std::uint8_t {
    Offload = 0,  ///< device -> host
    Prefetch = 1, ///< host -> device
    Last = Prefetch,
};

enum class TransferLane : std::uint8_t {
    Compute = 0,  ///< the compute stream (the reference offloads on it)
    Prefetch = 1, ///< the side stream used for prefetching
    Last = Prefetch,
};

enum class TimingSource : std::uint8_t {
    Measured = 0, ///< begin/end taken from device events
    Modeled = 1,  ///< computed from bytes and a configured bandwidth (CPU runs have no second device)
    Last = Modeled,
};

/// One Cache::update of one layer, described after the update has been applied.
struct UpdateEvent {
    std::int64_t tokensIn = 0;       ///< new tokens passed to update()
    std::int64_t seqLength = 0;      ///< tokens seen by the layer after the update
    std::int64_t storedTokens = 0;   ///< tokens physically held after the update
    std::int64_t capacity = -1;      ///< tokens the layer can hold; -1 = unbounded
    std::int64_t returnedTokens = 0; ///< K/V rows returned to attention
    std::int64_t bytes = 0;          ///< device bytes the layer holds after the update
    LayerKind layerType = LayerKind::Dynamic;
    bool operator==(const UpdateEvent&) const = default;
};

/// The result of get_mask_sizes for the current query.
struct MaskSizesEvent {
    std::int64_t queryLength = 0;
    std::int64_t kvLength = 0;
    std::int64_t kvOffset = 0;
    bool operator==(const MaskSizesEvent&) const = default;
};

/// A sliding layer dropped its oldest positions; window bounds are absolute token positions.
struct WindowSlideEvent {
    std::int64_t positionsEvicted = 0;
    std::int64_t windowStart = 0; ///< absolute position of the first token held
    std::int64_t windowEnd = 0;   ///< one past the last token held
    std::int64_t windowSize = 0;  ///< configured window length
    bool operator==(const WindowSlideEvent&) const = default;
};

/// A quantized layer moved its full-precision residual into the quantized store.
struct QuantizeFlushEvent {
    std::int64_t tokensMoved = 0;
    std::int64_t residualBefore = 0;
    std::int64_t residualAfter = 0;
    std::int64_t quantizedTokensAfter = 0;
    std::int64_t bytesBefore = 0; ///< device bytes of the layer before the flush
    std::int64_t bytesAfter = 0;  ///< device bytes of the layer after the flush
    double maxAbsError = 0.0;     ///< of dequantize(quantize(x)) against x, over the moved tokens
    double meanAbsError = 0.0;
    double relativeError = 0.0;
    bool operator==(const QuantizeFlushEvent&) const = default;
};

/// One offload or prefetch copy of a layer; times are on the session clock.
struct TransferEvent {
    TransferDirection direction = TransferDirection::Offload;
    TransferLane lane = TransferLane::Compute;
    TimingSource timing = TimingSource::Modeled;
    std::int64_t beginNs = 0;
    std::int64_t endNs = 0;
    std::int64_t bytes = 0;
    bool operator==(const TransferEvent&) const = default;
};

struct CropEvent {
    std::int64_t maxLength = 0; ///< as requested (the reference accepts negative values)
    std::int64_t seqLengthBefore = 0;
    std::int64_t seqLengthAfter = 0;
    bool operator==(const CropEvent&) const = default;
};

/// Beam search reorder: new batch row i takes old row beamIndices[i].
struct ReorderEvent {
    std::vector<std::int64_t> beamIndices;
    bool operator==(const ReorderEvent&) const = default;
};

struct BatchRepeatEvent {
    std::int64_t repeats = 0;
    std::int64_t batchBefore = 0;
    std::int64_t batchAfter = 0;
    bool operator==(const BatchRepeatEvent&) const = default;
};

struct BatchSelectEvent {
    std::vector<std::int64_t> indices;
    std::int64_t batchBefore = 0;
    std::int64_t batchAfter = 0;
    bool operator==(const BatchSelectEvent&) const = default;
};

struct ResetEvent {
    bool operator==(const ResetEvent&) const = default;
};

/// Bytes per memory tier: cache-wide when the event's layer is -1, else of that layer.
struct MemoryEvent {
    std::int64_t deviceFullPrecision = 0;
    std::int64_t deviceQuantized = 0;
    std::int64_t host = 0;
    bool operator==(const MemoryEvent&) const = default;
};

/// Opens a generation step: the token fed to the model (prefill: tokenId -1, text = the prompt).
struct StepBeginEvent {
    std::int64_t tokenId = -1;
    std::string text;
    bool operator==(const StepBeginEvent&) const = default;
};

/// Closes a generation step: the token the step produced and how long the step took.
struct StepEndEvent {
    std::int64_t tokenId = -1;
    std::string text;
    std::int64_t wallNs = 0; ///< wall-clock duration of the step
    bool operator==(const StepEndEvent&) const = default;
};

/// The time one layer's attention update occupied the compute stream, on the session clock (offloading
/// caches: the compute lane the transfers are scheduled against).
struct ComputeEvent {
    TimingSource timing = TimingSource::Modeled;
    std::int64_t beginNs = 0;
    std::int64_t endNs = 0;
    bool operator==(const ComputeEvent&) const = default;
};

/// The next-token distribution a step produced (row 0), as log-probabilities, for comparing sessions.
/// complete: logProbs holds the whole vocabulary (at most kLogitsFullVocabularyLimit entries), indexed
/// by token id, and tokenIds is empty. Otherwise the kLogitsTopCount most likely tokens, descending,
/// with their ids in tokenIds.
struct LogitsEvent {
    std::vector<std::int64_t> tokenIds;
    std::vector<float> logProbs;
    bool complete = false;
    bool operator==(const LogitsEvent&) const = default;
};
inline constexpr std::int64_t kLogitsFullVocabularyLimit = 1024;
inline constexpr std::int64_t kLogitsTopCount = 256;

/// A cache press compressed one layer (format 1.2; the press and its options are in the metadata's
/// cache_settings). Every KV head keeps lengthAfter tokens and drops droppedCount. positions holds, for
/// batch row 0 head after head, first the keptRecorded kept positions (heads x lengthAfter, or none when
/// that exceeds kCompressionKeptLimit), then the dropped positions, every k-th per head when a head dropped
/// more than kCompressionDroppedLimit / heads; droppedScores are those dropped tokens' scores (empty where
/// the press ranks by no single score). Format 1.3 appends keptScores, the recorded kept tokens' scores in
/// the same order (empty likewise), and keptPerHead: empty when every head keeps lengthAfter, else each
/// head's own kept count (heads keeping different numbers, as AdaKV's do), with droppedCount then the
/// dropped tokens of all heads together. CompressionLayout finds each head's part of these lists.
struct CompressionEvent {
    std::int32_t lengthBefore = 0;
    std::int32_t lengthAfter = 0;
    std::int32_t heads = 0;
    std::int32_t droppedCount = 0;
    std::int32_t keptRecorded = 0;
    std::vector<std::int64_t> positions;
    std::vector<float> droppedScores;
    std::vector<float> keptScores;
    std::vector<std::int32_t> keptPerHead;
    /// 1.5: key channels a channel press (ThinK) zeroed, for batch row 0, head after head (the same count per
    /// head: size / heads), ascending within a head; empty for token presses. Such an event keeps every
    /// token.
    std::vector<std::int32_t> prunedChannels;
    /// 1.7: where a press re-rotated the kept keys (KeyRerotation, alone or as a composed stage): the
    /// position each recorded kept key's rotary embedding now encodes, in the order of the kept positions
    /// (keptRecorded entries; KeyRerotation maps a head's p_0 < p_1 < ... to 0, 1, ...). Empty when every key
    /// keeps the rotation of its own position, or when the kept positions are not recorded.
    std::vector<std::int64_t> rotaryPositions;
    bool operator==(const CompressionEvent&) const = default;
};
inline constexpr std::int64_t kCompressionKeptLimit = 8192;
inline constexpr std::int64_t kCompressionDroppedLimit = 1024;

/// Paged serving (format 1.4, docs/paged.md): the block pool's configuration, emitted once before any other
/// paged event. groupWindows holds one entry per layer group: 0 for full attention, else the sliding window
/// in tokens. nullBlock is the reserved null block (FreePolicy Current: 0), -1 when there is none.
struct PagedPoolEvent {
    std::int64_t blockSize = 0;
    std::int32_t numBlocks = 0;
    std::int32_t nullBlock = -1;
    bool prefixCaching = true;
    std::uint8_t freePolicy = 0; ///< 0 document, 1 current
    std::vector<std::int64_t> groupWindows;
    std::int64_t maxNumBatchedTokens = 0;
    std::int32_t maxNumSeqs = 0;
    bool operator==(const PagedPoolEvent&) const = default;
};

/// A request reached its arrival step and joined the waiting queue.
struct RequestArrivedEvent {
    std::string requestId;
    std::int64_t promptTokens = 0;
    std::int64_t maxTokens = 0;
    bool operator==(const RequestArrivedEvent&) const = default;
};

/// A waiting request was admitted to the running list: it holds numTokens tokens (prompt and, after a
/// preemption, its outputs), of which cachedTokens were found in the prefix cache. resumed: it had been
/// preempted.
struct RequestAdmittedEvent {
    std::string requestId;
    std::int64_t numTokens = 0;
    std::int64_t cachedTokens = 0;
    bool resumed = false;
    bool operator==(const RequestAdmittedEvent&) const = default;
};

/// The scheduler gave a request numTokens tokens this step, from position firstPosition; samples: the step
/// produces its next token (the prompt, or what is left of it, is computed).
struct RequestScheduledEvent {
    std::string requestId;
    std::int64_t firstPosition = 0;
    std::int64_t numTokens = 0;
    bool samples = false;
    bool operator==(const RequestScheduledEvent&) const = default;
};

/// A running request was preempted: its blocks were freed (BlockFreed events follow) and it went back to
/// the front of the waiting queue; numComputedTokens it had computed are to be recomputed.
struct RequestPreemptedEvent {
    std::string requestId;
    std::int64_t numComputedTokens = 0;
    bool operator==(const RequestPreemptedEvent&) const = default;
};

/// Why a request finished.
enum class FinishReason : std::uint8_t {
    Eos = 0,
    MaxTokens = 1,
    MaxModelLen = 2,
    Last = MaxModelLen,
};

/// A request finished; its blocks are freed next (BlockFreed events follow).
struct RequestFinishedEvent {
    std::string requestId;
    FinishReason reason = FinishReason::MaxTokens;
    std::int64_t outputTokens = 0;
    bool operator==(const RequestFinishedEvent&) const = default;
};

/// The head of the free queue went to a request's block table of one group, at tableIndex.
struct BlockAllocatedEvent {
    std::string requestId;
    std::int32_t group = 0;
    std::int32_t block = 0;
    std::int32_t tableIndex = 0;
    bool operator==(const BlockAllocatedEvent&) const = default;
};

/// A prefix-cache hit: a cached block joined a request's table at tableIndex (reference count + 1, taken
/// out of the free queue when it was free).
struct BlockTouchedEvent {
    std::string requestId;
    std::int32_t group = 0;
    std::int32_t block = 0;
    std::int32_t tableIndex = 0;
    std::int32_t refCnt = 0; ///< after the touch
    bool operator==(const BlockTouchedEvent&) const = default;
};

/// A full block was cached: it holds the request's tokens [tokenBegin, tokenEnd) and hash, whose parent is
/// parentHash (the previous block's, or the fixed seed for the first block).
struct BlockCachedEvent {
    std::string requestId;
    std::int32_t group = 0;
    std::int32_t block = 0;
    std::uint64_t hash = 0;
    std::uint64_t parentHash = 0;
    std::int64_t tokenBegin = 0;
    std::int64_t tokenEnd = 0;
    bool operator==(const BlockCachedEvent&) const = default;
};

/// A request released a block: refCnt after the release; when it reached 0 the block joined the free queue
/// at queuePosition (0 = head), else queuePosition is -1. windowed: a sliding-window group dropped the block
/// from the table slot tableIndex (the slot becomes a hole); otherwise the whole request was freed.
struct BlockFreedEvent {
    std::string requestId;
    std::int32_t group = 0;
    std::int32_t block = 0;
    std::int32_t tableIndex = 0;
    std::int32_t refCnt = 0;
    std::int32_t queuePosition = -1;
    bool windowed = false;
    bool operator==(const BlockFreedEvent&) const = default;
};

/// The free queue's head, about to be allocated, still held a hash: the hash is forgotten (an eviction).
struct BlockEvictedEvent {
    std::int32_t group = 0;
    std::int32_t block = 0;
    std::uint64_t hash = 0;
    bool operator==(const BlockEvictedEvent&) const = default;
};

/// A request's tokens from firstPosition on (format 1.4): its prompt when it arrives, each sampled token in the
/// step that sampled it, so that a replay shows every request's text with no tokenizer. text holds the tokens'
/// pieces one after another and pieceEnds[i] is where token i's piece ends in it; both are empty when the run
/// had no text for them (the scheduler tests' fake model).
struct RequestTokensEvent {
    std::string requestId;
    std::int64_t firstPosition = 0;
    std::vector<std::int64_t> tokenIds;
    std::string text;
    std::vector<std::int64_t> pieceEnds;
    bool operator==(const RequestTokensEvent&) const = default;
};

/// A quantising layer's error per KV head and channel (format 1.8; llama.cpp's cache), over every token it has
/// quantised since its first update (batch rows together; `tokens` of them): the root mean squared error of what
/// attention reads against what the model gave, and the root mean square of the given values (the channel's
/// size: outlier channels show there), for keys and values, head after head (heads x head_dim entries each, the
/// channels in the order the cache stores them). Cumulative, so the latest event of a layer says it all; a
/// tracer emits it with the layer's update as the count grows (each step at first, then every 1/32 more tokens).
struct ChannelErrorEvent {
    std::int32_t heads = 0;
    std::int64_t tokens = 0;
    std::vector<float> keyError;
    std::vector<float> keySize;
    std::vector<float> valueError;
    std::vector<float> valueSize;
    bool operator==(const ChannelErrorEvent&) const = default;
};

/// Where a speculative step's draft came from.
enum class DraftSource : std::uint8_t {
    PromptLookup = 0,   ///< an earlier occurrence of the text's last n-gram (Transformers' prompt_lookup_num_tokens)
    AssistantModel = 1, ///< a smaller model sharing the vocabulary (Transformers' assistant_model)
    Last = AssistantModel,
};

/// One verification of speculative decoding (format 1.9, kind 29; layer -1, after the step's cache events): the step
/// wrote the drafted tokens into every layer at positions [firstPosition, firstPosition + drafted), after the tokens it
/// fed, verified them in one forward pass, kept the first `accepted` and cropped the rest, so positions
/// [firstPosition + accepted, firstPosition + drafted) were written and rolled back; the model's own next token
/// follows the accepted drafts at firstPosition + accepted (the step's step_end names it). draftText holds the
/// drafts' text pieces one after another, draft i's ending at byte pieceEnds[i] (both empty without text).
/// lengthsBefore and lengthsAfter are every layer's seq_length before the step and after the crop, so that a reader
/// sees each layer roll back without folding the step.
struct SpeculationEvent {
    DraftSource source = DraftSource::PromptLookup;
    std::int64_t firstPosition = 0;
    std::vector<std::int64_t> draftIds;
    std::string draftText;
    std::vector<std::int64_t> pieceEnds;
    std::int64_t accepted = 0;
    std::vector<std::int64_t> lengthsBefore;
    std::vector<std::int64_t> lengthsAfter;
    std::int64_t drafted() const { return static_cast<std::int64_t>(draftIds.size()); }
    /// Draft i's text piece; empty where the event has none.
    std::string_view piece(std::size_t draft) const;
    bool operator==(const SpeculationEvent&) const = default;
};

/// What changed in a server's prefix cache, as its KV event stream says (vLLM's BlockStored, BlockRemoved,
/// AllBlocksCleared; SGLang's alike).
enum class ServerCacheChange : std::uint8_t {
    Stored = 0,
    Removed = 1,
    Cleared = 2,
    Last = Cleared,
};

/// One event of a server's KV event stream (format 1.10; `kvscope --attach`, docs/paged.md), recorded as the
/// server sent it. Stored: blockHashes, each holding blockSize of tokenIds in order, the first under
/// parentHash (hasParent false: a prompt's first block); text and pieceEnds give the tokens' text where a
/// tokenizer was given (as RequestTokens), else both are empty. Removed: blockHashes left `medium`. Cleared:
/// every block of every medium went. medium is the server's name for where blocks live (GPU, CPU, DISK, ...),
/// group its KV cache group (layer group).
struct ServerCacheEvent {
    // The small fields first: packed together, they keep Event within its size budget (EventTest).
    ServerCacheChange change = ServerCacheChange::Stored;
    bool hasParent = false;
    std::int32_t group = 0;
    std::vector<std::uint64_t> blockHashes;
    std::uint64_t parentHash = 0;
    std::vector<std::int64_t> tokenIds;
    std::int64_t blockSize = 0;
    std::string medium;
    std::string text;
    std::vector<std::int64_t> pieceEnds;
    bool operator==(const ServerCacheEvent&) const = default;
};

/// Where a server's stream stands after one of its messages (format 1.10), emitted with the message's
/// ServerCache events: the message's sequence number and server time, whether it came from the replay socket,
/// the messages received, lost in gaps the replay could not fill, and refused (undecodable) so far, and the
/// server's own prefix-cache counters from its /metrics (vllm:prefix_cache_queries/hits; -1: not known).
struct ServerStatusEvent {
    std::uint64_t messageSequence = 0;
    double serverTime = 0;
    bool replayed = false;
    std::int64_t messages = 0;
    std::int64_t lostMessages = 0;
    std::int64_t refusedMessages = 0;
    std::int64_t prefixCacheQueries = -1;
    std::int64_t prefixCacheHits = -1;
    bool operator==(const ServerStatusEvent&) const = default;
};

/// The variant index is the kind's number in session files: append new payloads at the end only.
using EventPayload =
    std::variant<UpdateEvent, MaskSizesEvent, WindowSlideEvent, QuantizeFlushEvent, TransferEvent, CropEvent,
                 ReorderEvent, BatchRepeatEvent, BatchSelectEvent, ResetEvent, MemoryEvent, StepBeginEvent,
                 StepEndEvent, ComputeEvent, LogitsEvent, CompressionEvent, PagedPoolEvent,
                 RequestArrivedEvent, RequestAdmittedEvent, RequestScheduledEvent, RequestPreemptedEvent,
                 RequestFinishedEvent, BlockAllocatedEvent, BlockTouchedEvent, BlockCachedEvent,
                 BlockFreedEvent, BlockEvictedEvent, RequestTokensEvent, ChannelErrorEvent,
                 SpeculationEvent, ServerCacheEvent, ServerStatusEvent>;

/// Names the alternative held by an EventPayload; equal to its variant index.
enum class EventKind : std::uint8_t {
    Update = 0,
    MaskSizes = 1,
    WindowSlide = 2,
    QuantizeFlush = 3,
    Transfer = 4,
    Crop = 5,
    Reorder = 6,
    BatchRepeat = 7,
    BatchSelect = 8,
    Reset = 9,
    Memory = 10,
    StepBegin = 11,
    StepEnd = 12,
    Compute = 13,
    Logits = 14,
    Compression = 15,
    PagedPool = 16,
    RequestArrived = 17,
    RequestAdmitted = 18,
    RequestScheduled = 19,
    RequestPreempted = 20,
    RequestFinished = 21,
    BlockAllocated = 22,
    BlockTouched = 23,
    BlockCached = 24,
    BlockFreed = 25,
    BlockEvicted = 26,
    RequestTokens = 27,
    ChannelError = 28,
    Speculation = 29,
    ServerCache = 30,
    ServerStatus = 31,
};
inline constexpr std::size_t kEventKindCount = std::variant_size_v<EventPayload>;
static_assert(static_cast<std::size_t>(EventKind::ServerStatus) + 1 == kEventKindCount,
              "EventKind must list every EventPayload alternative in order");

/// One cache or generation operation as recorded by the trace.
struct Event {
    std::int64_t step = 0;      ///< generation step; 0 = prefill
    std::int32_t layer = -1;    ///< -1 when the operation is not per layer
    std::uint64_t sequence = 0; ///< emission order within the session, assigned by the emitter
    EventPayload payload;

    EventKind kind() const { return static_cast<EventKind>(payload.index()); }
    bool operator==(const Event&) const = default;
};

/// Stable snake_case names, used in JSON output, the event log and exports.
std::string_view toString(EventKind kind);
std::string_view toString(TransferDirection direction);
std::string_view toString(TransferLane lane);
std::string_view toString(TimingSource timing);
std::string_view toString(FinishReason reason);
std::string_view toString(DraftSource source);
std::string_view toString(ServerCacheChange change);
/// Whether the kind is one of the paged-serving events (PagedPool .. BlockEvicted, RequestTokens): step-level,
/// folded into StepState::paged (RequestTokens changes nothing there: views read text from the timeline).
bool isPagedKind(EventKind kind);
/// Whether the kind is one of an attached server's events (ServerCache, ServerStatus): step-level, folded into
/// StepState::server.
bool isServerKind(EventKind kind);
std::optional<EventKind> eventKindFromString(std::string_view name);

} // namespace kvscope::trace
