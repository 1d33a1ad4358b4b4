// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/CacheLayer.h"
#include "kvscope/cache/CacheObserver.h"
#include "kvscope/cache/KeyValueStates.h"
#include "kvscope/cache/MaskSizes.h"
#include "kvscope/cache/ModeledStreams.h"
#include "kvscope/cache/Offloading.h"
#include "kvscope/cache/TransferModel.h"
#include "kvscope/trace/EventEmitter.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::trace {
class EventSink;
}

namespace kvscope::cache {

class AttentionLayer;
class CacheTracer;
class CudaStreamOffloadScheduler;
class ModeledOffloadScheduler;
class OffloadScheduler;
struct OffloadState;

/// A model's cache: one layer cache per model layer, per-layer dispatch, and the offload policy
/// (the reference's `Cache`). Layers are either given up front or replicated lazily from a factory
/// as updates reach new layer indices.
///
/// Events: with a sink attached (setEventSink), every operation is reported as trace events, built
/// from sizes and counters only. Per `update` of layer i, in this order: [Transfer(j, prefetch) when
/// offloading moved layer j back], Update(i), [WindowSlide(i) when a sliding layer evicted positions],
/// [QuantizeFlush(i) when a quantized layer flushed], [Transfer(i, offload)]; a layer's Memory event
/// (its three tiers) follows only where the event before it does not already imply them to
/// trace::StateReducer (a flush, an offloaded hybrid layer...). The cache-wide totals, Memory(-1), come
/// once per step: from finishStep(), or from setStep() when the step changes. `maskSizes` emits
/// MaskSizes; crop emits Crop and Memory per layer, reorder/batch operations/reset one cache-wide
/// event, then Memory for every layer and the totals.
///
/// Offloading (the reference's `offloading`/`only_non_sliding`): before updating layer i the compute
/// stream waits for pending prefetches and layer prefetchTarget(i + 1) is prefetched; after the
/// update, layer i is offloaded when offloadsAfterUpdate(i). An offload scheduler does the moving: on
/// CUDA the copies run on real streams and are timed with device events (Measured); elsewhere
/// ModeledStreams gives every copy and update a place on a modeled compute lane and prefetch lane
/// (Modeled), with copy times from the TransferModel and update times measured with steady_clock (or
/// the model's fixed cost).
///
/// Observers (addObserver; tracing is one) see every key/value update before, after, and once the
/// layer has been taken out, so policies that act on a layer after its update need not know about
/// offloading.
class Cache {
public:
    using LayerFactory = std::function<std::unique_ptr<CacheLayer>()>;

    explicit Cache(std::vector<std::unique_ptr<CacheLayer>> layers, Offloading offloading = Offloading::Off);
    explicit Cache(LayerFactory layerToReplicate, Offloading offloading = Offloading::Off);
    virtual ~Cache();
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    virtual std::string typeName() const { return "Cache"; }

    /// Caches new key/value states `[batch, heads, tokens, head_dim]` for one layer and returns the
    /// states its attention uses; with offloading, prefetches the next layer and offloads this one.
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates, int64_t layerIdx);
    at::Tensor updateConvState(const at::Tensor& convStates, int64_t layerIdx);
    at::Tensor updateRecurrentState(const at::Tensor& recurrentStates, int64_t layerIdx);
    /// Allocates every layer ahead of the first update (per-layer heads and head dims).
    void earlyInitialization(int64_t batchSize, const std::vector<int64_t>& numHeads,
                             const std::vector<int64_t>& headDims, at::ScalarType dtype, const at::Device& device);
    void earlyInitialization(int64_t batchSize, int64_t numHeads, int64_t headDim, at::ScalarType dtype,
                             const at::Device& device);

    /// Tokens seen by a layer; linear-attention layers redirect index 0 to the first attention layer.
    int64_t seqLength(int64_t layerIdx = 0) const;
    /// Whether a linear-attention layer holds state; without an index, the last such layer.
    bool hasPreviousState(std::optional<int64_t> layerIdx = std::nullopt) const;
    MaskSizes maskSizes(int64_t queryLength, int64_t layerIdx) const;
    int64_t maxCacheShape(int64_t layerIdx = 0) const;
    /// The position of the next query's first token (the release's `get_query_offset`): the layer's length,
    /// shifted by caches whose queries run ahead (MtpCache, DFlashCache).
    virtual int64_t queryOffset(int64_t layerIdx = 0) const { return seqLength(layerIdx); }
    /// Caches new indexer keys `[batch, tokens, index_head_dim]` in an indexed layer (DeepSeek-V3.2's sparse
    /// attention) and returns all it holds; a ValueError for any other layer.
    at::Tensor updateIndexer(const at::Tensor& indexerKeyStates, int64_t layerIdx);

    virtual void reset();
    virtual void reorder(const at::Tensor& beamIdx);
    virtual void crop(int64_t maxLength);
    /// The release's `crop(tokens_to_remove)` on every layer (CacheLayer::cropTokens): what speculative
    /// decoding calls with minus the rejected draft tokens.
    virtual void cropTokens(int64_t tokensToRemove);
    /// The release's `activate_past_recording()` on every layer that has it (sliding, linear attention).
    virtual void activatePastRecording();
    virtual void batchRepeatInterleave(int64_t repeats);
    virtual void batchSelectIndices(const at::Tensor& indices);

    int64_t maxBatchSize() const;
    int64_t maxCacheLen() const;
    bool isCompileable() const;
    bool isInitialized() const;
    std::vector<bool> isSliding() const;

    size_t size() const { return m_layers.size(); }
    CacheLayer& layer(size_t index) { return *m_layers.at(index); }
    const CacheLayer& layer(size_t index) const { return *m_layers.at(index); }

    bool offloading() const { return m_offloading != Offloading::Off; }
    /// Whether only non-sliding layers move; false when the cache does not offload at all.
    bool offloadOnlyNonSliding() const { return m_offloading == Offloading::OnlyNonSliding; }
    /// The layer the reference's `prefetch(layerIdx)` moves: the first eligible layer from `layerIdx`
    /// on, wrapping around (update of layer i asks for i + 1), or nothing where the reference would
    /// crash (every layer sliding while only non-sliding layers may move).
    std::optional<int64_t> prefetchTarget(int64_t layerIdx) const;
    /// Whether the reference offloads `layerIdx` after its update.
    bool offloadsAfterUpdate(int64_t layerIdx) const;
    /// Whether a layer's states are in host memory now (on CPU-only runs: in the modeled sense).
    bool isOffloaded(size_t index) const { return index < m_onHost.size() && m_onHost[index]; }
    /// Empty, or why offloading did less than asked: with only_non_sliding and every layer sliding the
    /// reference raises `ValueError: False is not in list` in `prefetch`; kvscope offloads and
    /// prefetches nothing and sets this text (the cache prints nothing: callers show it).
    const std::string& offloadNotice() const { return m_offloadNotice; }
    /// Costs of modeled copies and updates (CPU runs); applies to what is scheduled from now on.
    void setTransferModel(const TransferModel& model) { m_modeled.setModel(model); }
    /// The modeled lanes: totals and the span of the last update (CPU runs with offloading).
    const ModeledStreams& modeledStreams() const { return m_modeled; }

    /// Calls `observer` around every key/value update from now on, after the tracer; it must outlive
    /// the cache or be removed first.
    void addObserver(CacheObserver& observer);
    void removeObserver(CacheObserver& observer);

    /// Reports every operation to `sink` as trace events; null detaches (first closing the step, see
    /// finishStep). Without a sink, events cost one branch per operation. The sink must outlive the
    /// cache or be detached first.
    void setEventSink(trace::EventSink* sink);
    trace::EventSink* eventSink() const { return m_emitter.sink(); }
    /// The generation step stamped on the events from now on (0 = prefill); a change of step first
    /// emits the ending step's totals if finishStep() did not.
    void setStep(int64_t step);
    int64_t step() const { return m_emitter.step(); }
    /// The emitter stamping this cache's events: a generator emits StepBegin/StepEnd through it so that
    /// one sequence numbering covers the session. Attach sinks with setEventSink, not through it.
    trace::EventEmitter& eventEmitter() { return m_emitter; }
    /// Closes a step's events (a generator calls it before StepEnd): on CUDA waits for the copies still
    /// in flight and emits their Transfer events, then emits the cache-wide Memory totals.
    void finishStep();
    /// Reports a layer whose states changed outside an update (a press kept some of its tokens): emits the
    /// layer's Memory now, and the totals that finishStep emits count it as it is now.
    void reportRewrittenLayer(size_t index);

protected:
    /// Python list indexing: negative indices count from the end; out of range is an IndexError.
    size_t resolveIndex(int64_t layerIdx, const char* operation) const;
    /// The mask sizes before events: the layer's, or a cache's own shift of them (MtpCache, DFlashCache).
    virtual MaskSizes computeMaskSizes(int64_t queryLength, int64_t layerIdx) const;
    /// The first attention layer, for calls on index 0 that land on a linear-attention layer.
    const AttentionLayer& attentionLayerFor(int64_t layerIdx, const char* operation) const;

    std::vector<std::unique_ptr<CacheLayer>> m_layers;
    LayerFactory m_layerToReplicate;
    Offloading m_offloading;

private:
    friend struct OffloadState;

    /// Appends replicated layers until `layerIdx` exists (caches built from a layer factory).
    void replicateLayersThrough(int64_t layerIdx);
    /// The attention layer a key/value update addresses; an AttributeError for a linear-attention one.
    AttentionLayer& attentionToUpdate(size_t index, int64_t layerIdx);
    /// The scheduler that moves layers for updates on `device` (a no-op one without offloading).
    OffloadScheduler& offloadScheduler(const at::Device& device);
    OffloadState offloadState();
    /// Calls `call(observer)` for the tracer (while tracing) and every added observer.
    template <typename Call> void notifyObservers(Call&& call);
    /// Emits the copies still in flight on a device, waiting for them (before operations on every layer).
    void drainTransfers();
    void noteNothingToOffload();
    /// Memory of every layer and the totals, after an operation that touched all layers.
    void emitAllMemory();
    /// Crop of every layer with events, `cropLayer` doing one layer's crop.
    template <typename CropLayer> void cropEveryLayer(int64_t argument, CropLayer&& cropLayer);
    /// A sink attached through setEventSink (one attached to eventEmitter() directly gets step events only).
    bool isTracing() const { return m_tracer != nullptr && m_emitter.enabled(); }

    /// Mutable so that the const `maskSizes` can report itself.
    mutable trace::EventEmitter m_emitter;
    std::unique_ptr<CacheTracer> m_tracer;
    ModeledStreams m_modeled;
    std::unique_ptr<ModeledOffloadScheduler> m_modeledScheduler;
    std::unique_ptr<CudaStreamOffloadScheduler> m_cudaScheduler;
    std::vector<CacheObserver*> m_observers;
    std::vector<bool> m_onHost;
    std::string m_offloadNotice;
};

} // namespace kvscope::cache
