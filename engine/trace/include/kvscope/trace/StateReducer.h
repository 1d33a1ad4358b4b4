// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/LayerState.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>

namespace kvscope::trace {

/// The one place that says how an event changes the state; Timeline, replay and tests all fold
/// events through it, so a rule changed here changes every view consistently.
///
/// Rules, per payload:
///   Update        kind, seqLength, storedTokens, capacity, returnedTokens; bytesDevice = bytes.
///                 Sliding layers: window = [seqLength - storedTokens, seqLength).
///                 Quantized layers: residualTokens = seqLength - quantizedTokens (so an update
///                 without a flush grows the residual; order relative to a flush does not matter).
///   MaskSizes     queryLength, kvLength, kvOffset.
///   WindowSlide   window bounds and size; evictedTokens accumulates.
///   QuantizeFlush residualTokens = residualAfter, quantizedTokens = quantizedTokensAfter,
///                 lastFlushStep = the event's step, bytesDevice = bytesAfter.
///   Transfer      Offload: residency Host, bytesHost = bytes, device bytes 0.
///                 Prefetch: residency Device, bytesDevice = bytes (all counted full precision
///                 until a Memory event says otherwise), bytesHost 0.
///   Crop          seqLength = seqLengthAfter; tokens are removed from the tail, so storedTokens
///                 shrinks by seqLengthBefore - seqLengthAfter; window and quantized counts clamp.
///   Reorder       nothing: beam reordering permutes batch rows, sizes are unchanged.
///   BatchRepeat/Select  batchSize = batchAfter.
///   Reset         token counts, mask sizes, window and residual/quantized counts go to 0; bytes
///                 stay, since the reference zeroes its tensors in place.
///   Memory        layer -1: cache-wide totals; layer >= 0: that layer's bytes per tier.
///   StepBegin/End the step's input token / produced token and wall time.
///   Compute, Logits  nothing: timelines and comparisons read them from the events themselves.
///   Compression   a press kept lengthAfter tokens: seqLength and storedTokens = lengthAfter;
///                 evictedTokens grows by lengthBefore - lengthAfter; a quantized layer holds them all
///                 quantized (residual 0). A masking press's (lengthAfter == lengthBefore) changes nothing.
/// Layer-level payloads with layer -1 apply to every layer the state knows at that moment.
class StateReducer {
public:
    /// What part of a StepState an event touches.
    enum class Scope : std::uint8_t {
        Step, ///< StepBegin, StepEnd, Logits, and Memory with layer -1
        Layer, ///< a layer-level payload (or Memory) with layer >= 0
        AllLayers, ///< a layer-level payload with layer -1
    };

    static Scope scopeOf(const Event& event);

    /// Opens a step: sets the step index and clears the per-step token fields. Call it before
    /// applying the step's events, also for steps that have none.
    static void beginStep(StepState& state, std::int64_t step);

    /// Folds one event into the state; a Layer event beyond the known layers grows the vector.
    static void apply(StepState& state, const Event& event);

    /// Folds a layer-level event into one layer, whatever the event's layer field says;
    /// step-level payloads are ignored. Memory is taken as that layer's bytes.
    static void apply(LayerState& layer, const Event& event);
};

} // namespace kvscope::trace
