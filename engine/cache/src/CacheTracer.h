// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/CacheObserver.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventEmitter.h"

#include <cstddef>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kvscope::cache {

class CacheLayer;
class LlamaCppLayer;
class QuantizedLayer;

/// Turns one cache's operations into trace events, from sizes and counters the layers already keep
/// (no tensor work), and keeps each layer's memory tiers so that cache-wide totals cost O(1) per update.
/// Lives only while a sink is attached; the Cache restarts it whenever one is attached. As an observer
/// of key/value updates it emits Update (and what follows from it) and the layer's Memory.
class CacheTracer : public CacheObserver {
public:
    /// What a layer held just before an update: what the update's events are derived from.
    struct Before {
        int64_t seqLength = 0;
        int64_t storedTokens = 0;
        int64_t quantizedTokens = 0;
        int64_t residualTokens = 0;
        int64_t bytes = 0;
    };

    explicit CacheTracer(trace::EventEmitter& emitter) : m_emitter(emitter) {}

    Before probe(size_t index, const CacheLayer& layer);

    void beforeUpdate(size_t index, const CacheLayer& layer) override { m_beforeUpdate = probe(index, layer); }
    void afterUpdate(size_t index, CacheLayer& layer, const UpdateFacts& facts) override;
    /// The layer's Memory, unless a pending device copy carries it (CudaStreamOffloadScheduler).
    void afterTakeOut(size_t index, const CacheLayer& layer, TakeOut where) override;

    /// Emits Update, then WindowSlide when a sliding layer evicted positions, then QuantizeFlush when a
    /// quantized layer flushed. `newBytes` are the bytes of the states passed in.
    void emitUpdate(size_t index, const CacheLayer& layer, const Before& before, int64_t tokensIn, int64_t newBytes,
                    int64_t returnedTokens);
    /// Emits an Update for a linear-attention layer's state update: no tokens are stored (the state has a
    /// fixed size), so the event carries the layer's kind and bytes, and its Memory follows.
    void emitStateUpdate(size_t index, const CacheLayer& layer);
    /// Emits Crop for an attention layer. A quantized layer's crop re-quantizes what it keeps; where that
    /// leaves other residual/quantized counts than the Crop rule implies, a QuantizeFlush follows with the
    /// real counts (its error fields are 0: a crop does not measure them).
    void emitCrop(size_t index, const CacheLayer& layer, const Before& before, int64_t maxLength);
    /// The event after which a layer's memory is reported: what the reducer already infers from it.
    enum class After : uint8_t {
        Update,   ///< device bytes = the Update's bytes; quantized and host bytes as last told
        Offload,  ///< everything on the host
        Prefetch, ///< everything on the device, at full precision
    };
    /// Accounts the layer's tiers for the totals and emits its Memory event unless the event just
    /// emitted (`after`) already implies exactly those tiers to the reducer; e.g. a plain layer's Update,
    /// or a quantized layer's Update without a flush. Saves an event per update in the common case.
    void reportMemory(size_t index, const CacheLayer& layer, bool onHost, After after);
    /// Accounts the layer and emits its Memory unconditionally.
    void emitMemory(size_t index, const CacheLayer& layer, bool onHost);
    /// Accounts the layer for a Memory event that will be emitted later (a pending device copy).
    trace::MemoryEvent accountForLater(size_t index, const CacheLayer& layer, bool onHost);
    /// Emits the cache-wide totals if they changed since last emitted (once per step, or after an
    /// operation on all layers).
    void emitTotalsIfChanged();
    /// Starts over for a new sink: the totals from every layer's present bytes, nothing told yet.
    void restart(const std::vector<std::unique_ptr<CacheLayer>>& layers, const std::vector<bool>& onHost);

    /// Whether a layer's channel error counting `tokens` is reported after one counting `reported` was: after every
    /// update at first, then once 1/32 more tokens have come (a long session carries ~32 reports per doubling of
    /// its length, each one the whole count); a count that fell (a reset) starts over.
    static bool reportsChannelError(int64_t reported, int64_t tokens);

    /// The reference's layer class as the trace names it.
    static trace::LayerKind kindOf(const CacheLayer& layer);
    /// Tokens the layer can hold between updates; -1 when unbounded. A DynamicSlidingWindowLayer
    /// keeps W - 1 tokens (and returns them with the new ones), a StaticSlidingWindowLayer keeps
    /// min(W, max_cache_len).
    static int64_t capacityOf(const CacheLayer& layer);
    /// Bytes an offload or prefetch of the layer moves: all its states, except for the hybrid
    /// linear/full-attention layer, whose offload moves only the linear-attention states (the
    /// reference's method resolution order).
    static int64_t transferBytes(const CacheLayer& layer);
    /// Batch size of the first layer that knows one; 0 when none does yet.
    static int64_t batchSizeOf(const std::vector<std::unique_ptr<CacheLayer>>& layers);
    /// The values of a 1-D index tensor (any device; a boolean mask gives the selected positions).
    static std::vector<int64_t> indicesOf(const at::Tensor& indices);

private:
    /// Facts about a layer that never change, looked up once per layer object.
    struct LayerInfo {
        const CacheLayer* layer = nullptr;
        trace::LayerKind kind = trace::LayerKind::Dynamic;
        int64_t capacity = -1;
        int64_t windowSize = 0;
        const QuantizedLayer* quantized = nullptr;
        const LlamaCppLayer* llamaCpp = nullptr;
        int64_t channelTokensReported = 0; ///< the count of the layer's last ChannelError event
    };

    LayerInfo& info(size_t index, const CacheLayer& layer);
    /// Emits a llama.cpp layer's ChannelError when reportsChannelError says so.
    void emitChannelError(int32_t layerIndex, LayerInfo& facts);
    /// Recomputes the layer's tiers for its residency, keeps them for the totals and returns them.
    trace::MemoryEvent account(size_t index, const CacheLayer& layer, bool onHost);
    /// The tiers the sink was last told for a layer (what a reducer folding the events holds).
    trace::MemoryEvent& told(size_t index);

    trace::EventEmitter& m_emitter;
    Before m_beforeUpdate; ///< the layer being updated, as it was before
    std::vector<LayerInfo> m_info;
    std::vector<trace::MemoryEvent> m_ledger;
    std::vector<trace::MemoryEvent> m_told;
    trace::MemoryEvent m_totals;
    trace::MemoryEvent m_totalsEmitted; ///< the totals the sink holds
};

} // namespace kvscope::cache
