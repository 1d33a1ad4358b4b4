// SPDX-License-Identifier: GPL-3.0-or-later
#include "CacheTracer.h"

#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionAndFullAttentionLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/LlamaCppLayer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace kvscope::cache {

using trace::LayerKind;

LayerKind CacheTracer::kindOf(const CacheLayer& layer) {
    // Most derived classes first: the hybrid and the sliding layers derive from the plain ones.
    if (dynamic_cast<const LinearAttentionAndFullAttentionLayer*>(&layer)) {
        return LayerKind::LinearAttentionAndFullAttention;
    }
    if (dynamic_cast<const DynamicSlidingWindowLayer*>(&layer)) {
        return LayerKind::DynamicSlidingWindow;
    }
    if (dynamic_cast<const StaticSlidingWindowLayer*>(&layer)) {
        return LayerKind::StaticSlidingWindow;
    }
    if (dynamic_cast<const StaticLayer*>(&layer)) {
        return LayerKind::Static;
    }
    if (dynamic_cast<const QuantizedLayer*>(&layer)) {
        return LayerKind::Quantized;
    }
    if (layer.asAttention() == nullptr && layer.asLinearAttention() != nullptr) {
        return LayerKind::LinearAttention;
    }
    return LayerKind::Dynamic;
}

int64_t CacheTracer::capacityOf(const CacheLayer& layer) {
    if (const auto* sliding = dynamic_cast<const DynamicSlidingWindowLayer*>(&layer)) {
        return sliding->slidingWindow() - 1;
    }
    if (const AttentionLayer* attention = layer.asAttention()) {
        // Static layers, sliding ones included (their max_cache_len is already min(W, max_cache_len)).
        if (auto length = attention->maxCacheLen()) {
            return *length;
        }
    }
    return -1;
}

int64_t CacheTracer::transferBytes(const CacheLayer& layer) {
    if (dynamic_cast<const LinearAttentionAndFullAttentionLayer*>(&layer)) {
        return layer.asLinearAttention()->storedBytes();
    }
    return layer.storedBytes();
}

CacheTracer::LayerInfo& CacheTracer::info(size_t index, const CacheLayer& layer) {
    if (index >= m_info.size()) {
        m_info.resize(index + 1);
    }
    LayerInfo& entry = m_info[index];
    if (entry.layer != &layer) {
        entry.layer = &layer;
        entry.kind = kindOf(layer);
        entry.capacity = capacityOf(layer);
        entry.windowSize = 0;
        if (trace::isSlidingWindow(entry.kind)) {
            // The window the layer really applies: W for the dynamic layer, min(W, max_cache_len) for the static one.
            entry.windowSize = layer.asAttention()->maxCacheShape();
        }
        entry.quantized = dynamic_cast<const QuantizedLayer*>(&layer);
        entry.llamaCpp = dynamic_cast<const LlamaCppLayer*>(&layer);
        entry.channelTokensReported = 0;
    }
    return entry;
}

bool CacheTracer::reportsChannelError(int64_t reported, int64_t tokens) {
    return tokens < reported || tokens >= reported + std::max<int64_t>(1, reported / 32);
}

void CacheTracer::emitChannelError(int32_t layerIndex, LayerInfo& facts) {
    const ChannelError& keys = facts.llamaCpp->keyChannelError();
    const int64_t tokens = keys.tokens();
    if (tokens == 0 || !reportsChannelError(facts.channelTokensReported, tokens)) {
        return;
    }
    facts.channelTokensReported = tokens;
    const ChannelError& values = facts.llamaCpp->valueChannelError();
    m_emitter.emit(layerIndex, trace::ChannelErrorEvent{static_cast<int32_t>(keys.heads()), tokens, keys.rmsError(),
                                                        keys.rmsValue(), values.rmsError(), values.rmsValue()});
}

void CacheTracer::afterUpdate(size_t index, CacheLayer& layer, const UpdateFacts& facts) {
    emitUpdate(index, layer, m_beforeUpdate, facts.newTokens, facts.newBytes, facts.returnedTokens);
}

void CacheTracer::afterTakeOut(size_t index, const CacheLayer& layer, TakeOut where) {
    if (where == TakeOut::OffloadPending) {
        return;
    }
    const bool onHost = where == TakeOut::Offloaded;
    reportMemory(index, layer, onHost, onHost ? After::Offload : After::Update);
}

CacheTracer::Before CacheTracer::probe(size_t index, const CacheLayer& layer) {
    const LayerInfo& facts = info(index, layer);
    Before before;
    if (const AttentionLayer* attention = layer.asAttention()) {
        before.seqLength = attention->seqLength();
        before.storedTokens = attention->storedTokens();
    }
    if (facts.quantized != nullptr) {
        before.residualTokens = facts.quantized->residualTokens();
        before.quantizedTokens = facts.quantized->quantizedTokens();
    }
    before.bytes = layer.storedBytes();
    return before;
}

void CacheTracer::emitUpdate(size_t index, const CacheLayer& layer, const Before& before, int64_t tokensIn,
                             int64_t newBytes, int64_t returnedTokens) {
    LayerInfo& facts = info(index, layer);
    const AttentionLayer& attention = *layer.asAttention();
    const auto layerIndex = static_cast<int32_t>(index);
    const int64_t seqLength = attention.seqLength();
    const int64_t stored = attention.storedTokens();
    m_emitter.emit(layerIndex, trace::UpdateEvent{tokensIn, seqLength, stored, facts.capacity, returnedTokens,
                                                  layer.storedBytes(), facts.kind});
    if (trace::isSlidingWindow(facts.kind)) {
        // Whatever was held plus what came in, less what is held now, fell out of the window.
        const int64_t evicted = before.storedTokens + tokensIn - stored;
        if (evicted > 0) {
            m_emitter.emit(layerIndex, trace::WindowSlideEvent{evicted, seqLength - stored, seqLength, facts.windowSize});
        }
    }
    if (facts.llamaCpp != nullptr && facts.llamaCpp->quantises()) {
        // llama.cpp quantises every token as it arrives: each update is a flush of its own tokens, no residual.
        const QuantizationReport& report = facts.llamaCpp->lastUpdate();
        trace::QuantizeFlushEvent event;
        event.tokensMoved = report.tokensMoved;
        event.residualBefore = tokensIn;
        event.residualAfter = 0;
        event.quantizedTokensAfter = stored;
        event.bytesBefore = before.bytes + newBytes;
        event.bytesAfter = layer.storedBytes();
        event.maxAbsError = report.maxAbsError;
        event.meanAbsError = report.meanAbsError;
        event.relativeError = report.relativeError;
        m_emitter.emit(layerIndex, event);
        emitChannelError(layerIndex, facts);
    }
    if (facts.quantized != nullptr) {
        if (const auto& flush = facts.quantized->lastFlush()) {
            trace::QuantizeFlushEvent event;
            event.tokensMoved = flush->tokensMoved;
            // The residual the flush drained: what it held plus this update's tokens, all quantized now.
            event.residualBefore = before.residualTokens + tokensIn;
            event.residualAfter = facts.quantized->residualTokens();
            event.quantizedTokensAfter = flush->quantizedTokensAfter;
            event.bytesBefore = before.bytes + newBytes;
            event.bytesAfter = layer.storedBytes();
            event.maxAbsError = flush->maxAbsError;
            event.meanAbsError = flush->meanAbsError;
            event.relativeError = flush->relativeError;
            m_emitter.emit(layerIndex, event);
        }
    }
}

void CacheTracer::emitStateUpdate(size_t index, const CacheLayer& layer) {
    const LayerInfo& facts = info(index, layer);
    m_emitter.emit(static_cast<int32_t>(index),
                   trace::UpdateEvent{0, 0, 0, 0, 0, layer.storedBytes(), facts.kind});
    reportMemory(index, layer, false, After::Update);
}

void CacheTracer::emitCrop(size_t index, const CacheLayer& layer, const Before& before, int64_t maxLength) {
    const AttentionLayer* attention = layer.asAttention();
    if (attention == nullptr) {
        return;
    }
    const LayerInfo& facts = info(index, layer);
    const auto layerIndex = static_cast<int32_t>(index);
    const int64_t seqAfter = attention->seqLength();
    m_emitter.emit(layerIndex, trace::CropEvent{maxLength, before.seqLength, seqAfter});
    if (trace::isSlidingWindow(facts.kind)) {
        // A layer recording its past (speculative decoding) held more than its window until this crop, which
        // trims it back: what the crop's lengths do not account for slid out of the window now.
        const int64_t implied = std::max<int64_t>(0, before.storedTokens - std::max<int64_t>(0, before.seqLength - seqAfter));
        const int64_t stored = attention->storedTokens();
        if (implied > stored) {
            m_emitter.emit(layerIndex, trace::WindowSlideEvent{implied - stored, seqAfter - stored, seqAfter, facts.windowSize});
        }
    }
    if (facts.quantized == nullptr) {
        return;
    }
    const int64_t quantizedAfter = facts.quantized->quantizedTokens();
    const int64_t residualAfter = facts.quantized->residualTokens();
    const int64_t impliedQuantized = std::min(before.quantizedTokens, seqAfter);
    if (quantizedAfter == impliedQuantized && residualAfter == seqAfter - impliedQuantized) {
        return;
    }
    trace::QuantizeFlushEvent event;
    event.tokensMoved = std::max<int64_t>(0, quantizedAfter - std::min(before.quantizedTokens, quantizedAfter));
    event.residualBefore = before.residualTokens;
    event.residualAfter = residualAfter;
    event.quantizedTokensAfter = quantizedAfter;
    event.bytesBefore = before.bytes;
    event.bytesAfter = layer.storedBytes();
    m_emitter.emit(layerIndex, event);
}

int64_t CacheTracer::batchSizeOf(const std::vector<std::unique_ptr<CacheLayer>>& layers) {
    for (const auto& layer : layers) {
        if (const auto* quantized = dynamic_cast<const QuantizedLayer*>(layer.get())) {
            if (quantized->keySequence().hasShape()) {
                return quantized->keySequence().storage().size(0);
            }
            continue;
        }
        if (const AttentionLayer* attention = layer->asAttention()) {
            if (auto batch = attention->maxBatchSize()) {
                return *batch;
            }
            const at::Tensor keys = attention->keys();
            if (keys.defined() && keys.dim() == 4) {
                return keys.size(0);
            }
        } else if (const LinearAttentionLayer* linear = layer->asLinearAttention()) {
            if (auto batch = linear->convBatchSize()) {
                return *batch;
            }
        }
    }
    return 0;
}

std::vector<int64_t> CacheTracer::indicesOf(const at::Tensor& indices) {
    if (!indices.defined()) {
        return {};
    }
    at::Tensor values = indices.to(at::kCPU);
    values = values.scalar_type() == at::kBool ? values.reshape(-1).nonzero().reshape(-1)
                                               : values.to(at::kLong).reshape(-1).contiguous();
    const int64_t* data = values.data_ptr<int64_t>();
    return std::vector<int64_t>(data, data + values.numel());
}

trace::MemoryEvent CacheTracer::account(size_t index, const CacheLayer& layer, bool onHost) {
    const LayerInfo& facts = info(index, layer);
    trace::MemoryEvent memory;
    if (facts.quantized != nullptr) {
        memory.deviceQuantized = facts.quantized->quantizedBytes();
        memory.deviceFullPrecision = facts.quantized->residualBytes();
    } else if (facts.llamaCpp != nullptr) {
        // llama.cpp's quantised K or V blocks count as quantised; an f16/f32/bf16 half as full precision.
        memory.deviceQuantized = facts.llamaCpp->quantizedBytes();
        memory.deviceFullPrecision = layer.storedBytes() - memory.deviceQuantized;
    } else {
        memory.deviceFullPrecision = layer.storedBytes();
    }
    if (onHost) {
        const int64_t moved = transferBytes(layer);
        const int64_t total = memory.deviceFullPrecision + memory.deviceQuantized;
        memory.host = moved;
        // What stays behind is full precision: only the hybrid layer leaves anything (its K/V).
        memory.deviceFullPrecision = total - moved;
        memory.deviceQuantized = 0;
    }
    if (index >= m_ledger.size()) {
        m_ledger.resize(index + 1);
    }
    trace::MemoryEvent& previous = m_ledger[index];
    m_totals.deviceFullPrecision += memory.deviceFullPrecision - previous.deviceFullPrecision;
    m_totals.deviceQuantized += memory.deviceQuantized - previous.deviceQuantized;
    m_totals.host += memory.host - previous.host;
    previous = memory;
    return memory;
}

trace::MemoryEvent& CacheTracer::told(size_t index) {
    if (index >= m_told.size()) {
        m_told.resize(index + 1);
    }
    return m_told[index];
}

void CacheTracer::reportMemory(size_t index, const CacheLayer& layer, bool onHost, After after) {
    const trace::MemoryEvent memory = account(index, layer, onHost);
    trace::MemoryEvent& known = told(index);
    // The StateReducer's rules for the event just emitted (see StateReducer.h).
    trace::MemoryEvent implied;
    switch (after) {
    case After::Update:
        implied = {layer.storedBytes() - known.deviceQuantized, known.deviceQuantized, known.host};
        break;
    case After::Offload:
        implied = {0, 0, transferBytes(layer)};
        break;
    case After::Prefetch:
        implied = {transferBytes(layer), 0, 0};
        break;
    }
    if (!(memory == implied)) {
        m_emitter.emit(static_cast<int32_t>(index), memory);
    }
    known = memory;
}

void CacheTracer::emitMemory(size_t index, const CacheLayer& layer, bool onHost) {
    const trace::MemoryEvent memory = account(index, layer, onHost);
    m_emitter.emit(static_cast<int32_t>(index), memory);
    told(index) = memory;
}

trace::MemoryEvent CacheTracer::accountForLater(size_t index, const CacheLayer& layer, bool onHost) {
    const trace::MemoryEvent memory = account(index, layer, onHost);
    told(index) = memory;
    return memory;
}

void CacheTracer::emitTotalsIfChanged() {
    if (m_totalsEmitted == m_totals) {
        return;
    }
    m_emitter.emit(-1, m_totals);
    m_totalsEmitted = m_totals;
}

void CacheTracer::restart(const std::vector<std::unique_ptr<CacheLayer>>& layers, const std::vector<bool>& onHost) {
    m_ledger.clear();
    m_told.clear();
    m_totals = trace::MemoryEvent{};
    // A new sink's reducer starts from zero totals: only a difference from that is news.
    m_totalsEmitted = trace::MemoryEvent{};
    for (LayerInfo& entry : m_info) {
        entry.channelTokensReported = 0; // the new sink has been told nothing
    }
    for (size_t index = 0; index < layers.size(); ++index) {
        account(index, *layers[index], index < onHost.size() && onHost[index]);
    }
}

} // namespace kvscope::cache
