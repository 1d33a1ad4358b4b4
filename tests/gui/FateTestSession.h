// SPDX-License-Identifier: GPL-3.0-or-later
// A literal session for the transcript's tests (TokenFatesTest, TranscriptViewTest): a chat prompt of 6 tokens and
// two steps, four layers that each hold the tokens another way.
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <vector>

namespace kvscope::gui::testing {

using trace::Event;

inline Event fateEvent(std::int64_t step, std::int32_t layer, trace::EventPayload payload) {
    return Event{step, layer, 0, std::move(payload)};
}

inline trace::UpdateEvent fateUpdate(std::int64_t in, std::int64_t seq, std::int64_t stored, trace::LayerKind kind) {
    trace::UpdateEvent event;
    event.tokensIn = in;
    event.seqLength = seq;
    event.storedTokens = stored;
    event.returnedTokens = stored;
    event.layerType = kind;
    return event;
}

/// Two KV heads of layer 3 keep four of six tokens each: head 0 drops 1 and 4, head 1 drops 2 and 4. A masking
/// press (AdaKV) keeps the cache's length and names each head's count.
inline trace::CompressionEvent perHeadDrop(bool masking) {
    trace::CompressionEvent event;
    event.lengthBefore = 6;
    event.lengthAfter = masking ? 6 : 4;
    event.heads = 2;
    event.droppedCount = masking ? 4 : 2;
    event.keptPerHead = masking ? std::vector<std::int32_t>{4, 4} : std::vector<std::int32_t>{};
    event.keptRecorded = 8;
    event.positions = {0, 2, 3, 5, 0, 1, 3, 5, 1, 4, 2, 4};
    return event;
}

/// The events: prompt of 6 tokens at step 0, one decode step. L0 full attention in chunks of 4 (fateChunks), L1 a
/// window of 4, L2 quantized (4 tokens flushed at the prefill) and offloaded at step 1, L3 pressed at the prefill.
/// Step 0 produces token 42 " It", step 1 token 43 " keeps".
inline std::vector<Event> fateEvents(bool maskingPress) {
    using K = trace::LayerKind;
    return {
        fateEvent(0, -1, trace::StepBeginEvent{-1, "prompt"}),
        fateEvent(0, 0, fateUpdate(6, 6, 6, K::Dynamic)),
        fateEvent(0, 0, trace::MaskSizesEvent{6, 6, 0}),
        fateEvent(0, 1, fateUpdate(6, 6, 4, K::DynamicSlidingWindow)),
        fateEvent(0, 1, trace::WindowSlideEvent{2, 2, 6, 4}),
        fateEvent(0, 1, trace::MaskSizesEvent{6, 6, 0}),
        fateEvent(0, 2, fateUpdate(6, 6, 6, K::Quantized)),
        fateEvent(0, 2, trace::QuantizeFlushEvent{4, 6, 2, 4}),
        fateEvent(0, 2, trace::MaskSizesEvent{6, 6, 0}),
        fateEvent(0, 3, fateUpdate(6, 6, 6, K::Dynamic)),
        fateEvent(0, 3, trace::MaskSizesEvent{6, 6, 0}),
        fateEvent(0, 3, perHeadDrop(maskingPress)),
        fateEvent(0, -1, trace::StepEndEvent{42, " It", 1000}),
        fateEvent(1, -1, trace::StepBeginEvent{42, " It"}),
        fateEvent(1, 0, fateUpdate(1, 7, 7, K::Dynamic)),
        fateEvent(1, 0, trace::MaskSizesEvent{1, 7, 0}),
        fateEvent(1, 1, fateUpdate(1, 7, 4, K::DynamicSlidingWindow)),
        fateEvent(1, 1, trace::WindowSlideEvent{1, 3, 7, 4}),
        fateEvent(1, 1, trace::MaskSizesEvent{1, 4, 3}),
        fateEvent(1, 2, fateUpdate(1, 7, 7, K::Quantized)),
        fateEvent(1, 2, trace::MaskSizesEvent{1, 7, 0}),
        fateEvent(1, 2, trace::TransferEvent{trace::TransferDirection::Offload}),
        fateEvent(1, 3, fateUpdate(1, maskingPress ? 7 : 5, maskingPress ? 7 : 5, K::Dynamic)),
        fateEvent(1, 3, trace::MaskSizesEvent{1, maskingPress ? 7 : 5, 0}),
        fateEvent(1, -1, trace::StepEndEvent{43, " keeps", 1000}),
    };
}

/// The attention chunk of each layer: layer 0 attends in chunks of 4.
inline const std::vector<std::int64_t> fateChunks = {4, 0, 0, 0};

/// The session's metadata: a chat turn's opening, then "Why cache?".
inline trace::SessionMetadata fateMetadata() {
    trace::SessionMetadata metadata;
    metadata.model = "literal";
    metadata.promptPieces = {"<|im_start|>", "user", "\n", "Why", " cache", "?"};
    metadata.attentionChunkSizes = fateChunks;
    return metadata;
}

inline trace::Timeline fateTimeline(bool maskingPress) {
    trace::Timeline timeline;
    for (const Event& event : fateEvents(maskingPress)) {
        timeline.emit(event);
    }
    return timeline;
}

} // namespace kvscope::gui::testing
