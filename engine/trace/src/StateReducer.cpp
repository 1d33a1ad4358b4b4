// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/StateReducer.h"

#include "kvscope/trace/PagedStateReducer.h"
#include "kvscope/trace/ServerCacheStateReducer.h"

#include <algorithm>
#include <type_traits>

namespace kvscope::trace {

namespace {

// One overload per payload kind: the rules documented in StateReducer.h, in the same order.
struct LayerFolder {
    LayerState& layer;
    std::int64_t step;

    void operator()(const UpdateEvent& e) const {
        layer.initialized = true;
        layer.kind = e.layerType;
        layer.seqLength = e.seqLength;
        layer.storedTokens = e.storedTokens;
        layer.capacity = e.capacity;
        layer.returnedTokens = e.returnedTokens;
        layer.bytesDevice = e.bytes;
        layer.lastUpdateStep = step;
        if (isSlidingWindow(layer.kind)) {
            layer.windowStart = e.seqLength - e.storedTokens;
            layer.windowEnd = e.seqLength;
        }
        if (layer.kind == LayerKind::Quantized)
            layer.residualTokens = std::max<std::int64_t>(0, layer.seqLength - layer.quantizedTokens);
    }

    void operator()(const MaskSizesEvent& e) const {
        layer.queryLength = e.queryLength;
        layer.kvLength = e.kvLength;
        layer.kvOffset = e.kvOffset;
    }

    void operator()(const WindowSlideEvent& e) const {
        // The window is what the layer holds (after an update the same count its Update event gave; after the
        // crop of a layer that recorded its past, the trimmed count).
        layer.storedTokens = e.windowEnd - e.windowStart;
        layer.windowStart = e.windowStart;
        layer.windowEnd = e.windowEnd;
        layer.windowSize = e.windowSize;
        layer.evictedTokens += e.positionsEvicted;
    }

    void operator()(const QuantizeFlushEvent& e) const {
        layer.residualTokens = e.residualAfter;
        layer.quantizedTokens = e.quantizedTokensAfter;
        layer.lastFlushStep = step;
        layer.lastFlushRelativeError = e.relativeError;
        layer.bytesDevice = e.bytesAfter;
    }

    void operator()(const TransferEvent& e) const {
        if (e.direction == TransferDirection::Offload) {
            layer.residency = Residency::Host;
            layer.bytesHost = e.bytes;
            layer.bytesDevice = 0;
            layer.bytesDeviceQuantized = 0;
        } else {
            layer.residency = Residency::Device;
            layer.bytesDevice = e.bytes;
            layer.bytesDeviceQuantized = 0;
            layer.bytesHost = 0;
        }
    }

    void operator()(const CropEvent& e) const {
        const std::int64_t removed = std::max<std::int64_t>(0, e.seqLengthBefore - e.seqLengthAfter);
        layer.seqLength = e.seqLengthAfter;
        layer.storedTokens = std::max<std::int64_t>(0, layer.storedTokens - removed);
        if (isSlidingWindow(layer.kind)) {
            layer.windowStart = layer.seqLength - layer.storedTokens;
            layer.windowEnd = layer.seqLength;
        }
        if (layer.kind == LayerKind::Quantized) {
            layer.quantizedTokens = std::min(layer.quantizedTokens, layer.seqLength);
            layer.residualTokens = layer.seqLength - layer.quantizedTokens;
        }
    }

    void operator()(const ReorderEvent&) const {}

    void operator()(const BatchRepeatEvent& e) const { layer.batchSize = e.batchAfter; }

    void operator()(const BatchSelectEvent& e) const { layer.batchSize = e.batchAfter; }

    void operator()(const ResetEvent&) const {
        layer.seqLength = 0;
        layer.storedTokens = 0;
        layer.returnedTokens = 0;
        layer.queryLength = 0;
        layer.kvLength = 0;
        layer.kvOffset = 0;
        layer.windowStart = 0;
        layer.windowEnd = 0;
        layer.evictedTokens = 0;
        layer.residualTokens = 0;
        layer.quantizedTokens = 0;
    }

    void operator()(const MemoryEvent& e) const {
        layer.bytesDevice = e.deviceFullPrecision + e.deviceQuantized;
        layer.bytesDeviceQuantized = e.deviceQuantized;
        layer.bytesHost = e.host;
    }

    void operator()(const StepBeginEvent&) const {}
    void operator()(const StepEndEvent&) const {}
    void operator()(const ComputeEvent&) const {}
    void operator()(const LogitsEvent&) const {}
    // Read by the channel error view from the retained events; no layer count changes.
    void operator()(const ChannelErrorEvent&) const {}
    // The step's update and crop events change the layers; this one says why (read from the retained events).
    void operator()(const SpeculationEvent&) const {}
    // Paged-serving events are step-level (PagedStateReducer): no layer changes.
    template <typename Paged>
    requires(std::is_same_v<Paged, PagedPoolEvent> || std::is_same_v<Paged, RequestArrivedEvent> ||
             std::is_same_v<Paged, RequestAdmittedEvent> || std::is_same_v<Paged, RequestScheduledEvent> ||
             std::is_same_v<Paged, RequestPreemptedEvent> || std::is_same_v<Paged, RequestFinishedEvent> ||
             std::is_same_v<Paged, BlockAllocatedEvent> || std::is_same_v<Paged, BlockTouchedEvent> ||
             std::is_same_v<Paged, BlockCachedEvent> || std::is_same_v<Paged, BlockFreedEvent> ||
             std::is_same_v<Paged, BlockEvictedEvent> || std::is_same_v<Paged, RequestTokensEvent>) void
    operator()(const Paged&) const {}
    // An attached server's events are step-level (ServerCacheStateReducer).
    void operator()(const ServerCacheEvent&) const {}
    void operator()(const ServerStatusEvent&) const {}

    void operator()(const CompressionEvent& e) const {
        if (e.lengthAfter == e.lengthBefore) {
            return; // a masking press (AdaKV): the cache holds every token as it did
        }
        layer.seqLength = e.lengthAfter;
        layer.storedTokens = e.lengthAfter;
        layer.evictedTokens += e.lengthBefore - e.lengthAfter;
        if (e.lengthAfter >= 0 && e.lengthAfter < e.lengthBefore && layer.kind != LayerKind::Static &&
            layer.kind != LayerKind::StaticSlidingWindow) {
            // The bytes shrink with the tokens. The engine's Memory event for the layer follows with the
            // exact figures; files written before it did (and other writers) keep this estimate until the
            // next update. Quotient and remainder apart, so that no product overflows (a damaged file's byte
            // counts may be anything): bytes x after / before, exactly.
            const auto kept = [&](std::int64_t bytes) {
                return bytes / e.lengthBefore * e.lengthAfter +
                       bytes % e.lengthBefore * e.lengthAfter / e.lengthBefore;
            };
            layer.bytesDevice = kept(layer.bytesDevice);
            layer.bytesDeviceQuantized = kept(layer.bytesDeviceQuantized);
            layer.bytesHost = kept(layer.bytesHost);
        }
        if (layer.kind == LayerKind::Quantized) {
            // The kept tokens are quantized again as a whole, leaving an empty residual.
            layer.quantizedTokens = e.lengthAfter;
            layer.residualTokens = 0;
        }
    }
};

} // namespace

StateReducer::Scope StateReducer::scopeOf(const Event& event) {
    switch (event.kind()) {
    case EventKind::StepBegin:
    case EventKind::StepEnd:
    case EventKind::Logits:
    case EventKind::Speculation:
        return Scope::Step;
    case EventKind::PagedPool:
    case EventKind::RequestArrived:
    case EventKind::RequestAdmitted:
    case EventKind::RequestScheduled:
    case EventKind::RequestPreempted:
    case EventKind::RequestFinished:
    case EventKind::BlockAllocated:
    case EventKind::BlockTouched:
    case EventKind::BlockCached:
    case EventKind::BlockFreed:
    case EventKind::BlockEvicted:
    case EventKind::RequestTokens:
    case EventKind::ServerCache:
    case EventKind::ServerStatus:
        return Scope::Step;
    case EventKind::Memory:
        return event.layer < 0 ? Scope::Step : Scope::Layer;
    default:
        return event.layer < 0 ? Scope::AllLayers : Scope::Layer;
    }
}

void StateReducer::beginStep(StepState& state, std::int64_t step) {
    state.step = step;
    state.inputTokenId = -1;
    state.inputText.clear();
    state.tokenId = -1;
    state.tokenText.clear();
    state.wallNs = 0;
}

void StateReducer::apply(StepState& state, const Event& event) {
    switch (scopeOf(event)) {
    case Scope::Step:
        if (const auto* begin = std::get_if<StepBeginEvent>(&event.payload)) {
            state.inputTokenId = begin->tokenId;
            state.inputText = begin->text;
        } else if (const auto* end = std::get_if<StepEndEvent>(&event.payload)) {
            state.tokenId = end->tokenId;
            state.tokenText = end->text;
            state.wallNs = end->wallNs;
        } else if (const auto* memory = std::get_if<MemoryEvent>(&event.payload)) {
            state.memoryDeviceFullPrecision = memory->deviceFullPrecision;
            state.memoryDeviceQuantized = memory->deviceQuantized;
            state.memoryHost = memory->host;
        } else if (isPagedKind(event.kind())) {
            PagedStateReducer::apply(state.paged, event);
        } else if (isServerKind(event.kind())) {
            ServerCacheStateReducer::apply(state.server, event);
        }
        return;
    case Scope::Layer: {
        const auto index = static_cast<std::size_t>(event.layer);
        if (index >= state.layers.size())
            state.layers.resize(index + 1);
        apply(state.layers[index], event);
        return;
    }
    case Scope::AllLayers:
        for (LayerState& layer : state.layers)
            apply(layer, event);
        return;
    }
}

void StateReducer::apply(LayerState& layer, const Event& event) {
    std::visit(LayerFolder{layer, event.step}, event.payload);
}

} // namespace kvscope::trace
