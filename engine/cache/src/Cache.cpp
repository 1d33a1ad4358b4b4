// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/Cache.h"

#include "CacheTracer.h"
#include "CudaStreamOffloadScheduler.h"
#include "ModeledOffloadScheduler.h"
#include "NoOffloadScheduler.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/IndexedLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/trace/EventSink.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

namespace kvscope::cache {

Cache::Cache(std::vector<std::unique_ptr<CacheLayer>> layers, Offloading offloading)
    : m_layers(std::move(layers)), m_offloading(offloading),
      m_modeledScheduler(std::make_unique<ModeledOffloadScheduler>(offloadState(), m_modeled)) {}

Cache::Cache(LayerFactory layerToReplicate, Offloading offloading)
    : m_layerToReplicate(std::move(layerToReplicate)), m_offloading(offloading),
      m_modeledScheduler(std::make_unique<ModeledOffloadScheduler>(offloadState(), m_modeled)) {
    if (!m_layerToReplicate) {
        throw CacheError(ErrorKind::Value,
                         "You should provide exactly one of `layers` or `layer_class_to_replicate` to initialize a Cache.");
    }
}

Cache::~Cache() = default;

size_t Cache::resolveIndex(int64_t layerIdx, const char* operation) const {
    const auto count = static_cast<int64_t>(m_layers.size());
    const int64_t resolved = layerIdx < 0 ? layerIdx + count : layerIdx;
    if (resolved < 0 || resolved >= count) {
        throw CacheError(ErrorKind::Index, std::string(operation) + ": layer index " + std::to_string(layerIdx) +
                                               " is out of range: the cache has " + std::to_string(count) +
                                               " layers (allowed: -" + std::to_string(count) + " to " +
                                               std::to_string(count - 1) + ")");
    }
    return static_cast<size_t>(resolved);
}

std::optional<int64_t> Cache::prefetchTarget(int64_t layerIdx) const {
    // Reads the layers directly rather than through isSliding(): this runs on every offloaded update.
    const auto count = static_cast<int64_t>(m_layers.size());
    if (m_offloading != Offloading::OnlyNonSliding) {
        return layerIdx < count ? layerIdx : 0;
    }
    for (int64_t index = std::max<int64_t>(layerIdx, 0); index < count; ++index) {
        if (!m_layers[static_cast<size_t>(index)]->isSliding()) {
            return index;
        }
    }
    for (int64_t index = 0; index < count; ++index) {
        if (!m_layers[static_cast<size_t>(index)]->isSliding()) {
            return index;
        }
    }
    return std::nullopt;
}

bool Cache::offloadsAfterUpdate(int64_t layerIdx) const {
    return !(m_offloading == Offloading::OnlyNonSliding && m_layers.at(static_cast<size_t>(layerIdx))->isSliding());
}

KeyValueStates Cache::update(const at::Tensor& keyStates, const at::Tensor& valueStates, int64_t layerIdx) {
    replicateLayersThrough(layerIdx);
    const size_t index = resolveIndex(layerIdx, "update");
    CacheLayer& layer = *m_layers[index];
    AttentionLayer& attention = attentionToUpdate(index, layerIdx);
    OffloadScheduler& scheduler = offloadScheduler(keyStates.device());
    notifyObservers([&](CacheObserver& observer) { observer.beforeUpdate(index, layer); });
    scheduler.bringIn(index);
    KeyValueStates states = scheduler.compute(index, [&] { return attention.update(keyStates, valueStates); });
    const UpdateFacts facts{keyStates.size(-2), static_cast<int64_t>(keyStates.nbytes() + valueStates.nbytes()),
                            states.keys.size(-2)};
    notifyObservers([&](CacheObserver& observer) { observer.afterUpdate(index, layer, facts); });
    const TakeOut where = scheduler.takeOut(index);
    notifyObservers([&](CacheObserver& observer) { observer.afterTakeOut(index, layer, where); });
    return states;
}

void Cache::replicateLayersThrough(int64_t layerIdx) {
    if (m_layerToReplicate) {
        while (static_cast<int64_t>(m_layers.size()) <= layerIdx) {
            m_layers.push_back(m_layerToReplicate());
        }
    }
}

AttentionLayer& Cache::attentionToUpdate(size_t index, int64_t layerIdx) {
    AttentionLayer* attention = m_layers[index]->asAttention();
    if (attention == nullptr) {
        throw CacheError(ErrorKind::Attribute, "layer " + std::to_string(layerIdx) + " is a " +
                                                   m_layers[index]->typeName() +
                                                   ", which has no key/value `update`; use updateConvState / "
                                                   "updateRecurrentState");
    }
    return *attention;
}

template <typename Call> void Cache::notifyObservers(Call&& call) {
    if (isTracing()) {
        call(static_cast<CacheObserver&>(*m_tracer));
    }
    for (CacheObserver* observer : m_observers) {
        call(*observer);
    }
}

void Cache::addObserver(CacheObserver& observer) { m_observers.push_back(&observer); }

void Cache::removeObserver(CacheObserver& observer) {
    m_observers.erase(std::remove(m_observers.begin(), m_observers.end(), &observer), m_observers.end());
}

OffloadState Cache::offloadState() { return OffloadState{*this, m_layers, m_onHost, m_emitter, m_tracer}; }

OffloadScheduler& Cache::offloadScheduler(const at::Device& device) {
    static NoOffloadScheduler inPlace;
    if (m_offloading == Offloading::Off) {
        return inPlace;
    }
    if (m_onHost.size() < m_layers.size()) {
        m_onHost.resize(m_layers.size(), false);
    }
    if (!device.is_cuda()) {
        return *m_modeledScheduler;
    }
    if (!m_cudaScheduler || m_cudaScheduler->device() != device) {
        // A cache lives on one device; a new one only means a first use or a move of the whole cache.
        if (m_cudaScheduler && m_emitter.enabled()) {
            m_cudaScheduler->drain();
        }
        m_cudaScheduler = std::make_unique<CudaStreamOffloadScheduler>(offloadState(), device);
    }
    return *m_cudaScheduler;
}

void Cache::drainTransfers() {
    if (m_cudaScheduler) {
        m_cudaScheduler->drain();
    }
}

void Cache::setStep(int64_t step) {
    if (step != m_emitter.step() && isTracing()) {
        // The totals of the step that ends, stamped with it, in case the generator did not finishStep().
        m_tracer->emitTotalsIfChanged();
    }
    m_emitter.setStep(step);
}

void Cache::finishStep() {
    if (isTracing()) {
        drainTransfers();
        m_tracer->emitTotalsIfChanged();
    }
}

void Cache::reportRewrittenLayer(size_t index) {
    if (isTracing()) {
        m_tracer->emitMemory(index, *m_layers.at(index), isOffloaded(index));
    }
}

void Cache::noteNothingToOffload() {
    if (m_offloadNotice.empty()) {
        m_offloadNotice = "offloading with only_non_sliding=True, but every layer of this " + typeName() +
                          " is sliding: the reference raises `ValueError: False is not in list` in `prefetch`; "
                          "kvscope offloads and prefetches nothing";
    }
}

void Cache::setEventSink(trace::EventSink* sink) {
    finishStep();
    m_emitter.setSink(sink);
    if (sink == nullptr) {
        m_tracer.reset();
        return;
    }
    if (!m_tracer) {
        m_tracer = std::make_unique<CacheTracer>(m_emitter);
    }
    // Totals are kept by difference from here on, so they start from every layer's present bytes.
    m_tracer->restart(m_layers, m_onHost);
}

void Cache::emitAllMemory() {
    for (size_t index = 0; index < m_layers.size(); ++index) {
        m_tracer->emitMemory(index, *m_layers[index], isOffloaded(index));
    }
    m_tracer->emitTotalsIfChanged();
}

at::Tensor Cache::updateConvState(const at::Tensor& convStates, int64_t layerIdx) {
    const size_t index = resolveIndex(layerIdx, "update_conv_state");
    LinearAttentionLayer* linear = m_layers[index]->asLinearAttention();
    if (linear == nullptr) {
        throw CacheError(ErrorKind::Value, "Cannot call `update_conv_state` on a non-LinearAttention layer! (layer " +
                                               std::to_string(layerIdx) + " is a " + m_layers[index]->typeName() + ")");
    }
    return linear->updateConvState(convStates);
}

at::Tensor Cache::updateRecurrentState(const at::Tensor& recurrentStates, int64_t layerIdx) {
    const size_t index = resolveIndex(layerIdx, "update_recurrent_state");
    LinearAttentionLayer* linear = m_layers[index]->asLinearAttention();
    if (linear == nullptr) {
        throw CacheError(ErrorKind::Value, "Cannot call `update_recurrent_state` on a non-LinearAttention layer! (layer " +
                                               std::to_string(layerIdx) + " is a " + m_layers[index]->typeName() + ")");
    }
    at::Tensor state = linear->updateRecurrentState(recurrentStates);
    // A pure linear-attention layer has no key/value update: its recurrent update, once per step, is
    // what the trace shows (a hybrid layer reports through its attention update instead).
    if (isTracing() && m_layers[index]->asAttention() == nullptr) {
        m_tracer->emitStateUpdate(index, *m_layers[index]);
    }
    return state;
}

void Cache::earlyInitialization(int64_t batchSize, int64_t numHeads, int64_t headDim, at::ScalarType dtype,
                                const at::Device& device) {
    earlyInitialization(batchSize, std::vector<int64_t>(m_layers.size(), numHeads),
                        std::vector<int64_t>(m_layers.size(), headDim), dtype, device);
}

void Cache::earlyInitialization(int64_t batchSize, const std::vector<int64_t>& numHeads,
                                const std::vector<int64_t>& headDims, at::ScalarType dtype, const at::Device& device) {
    if (numHeads.size() != m_layers.size()) {
        throw CacheError(ErrorKind::Value, "`num_head` was provided as a list of length " +
                                               std::to_string(numHeads.size()) + ", but the Cache currently has " +
                                               std::to_string(m_layers.size()) + " layers");
    }
    if (headDims.size() != m_layers.size()) {
        throw CacheError(ErrorKind::Value, "`head_dim` was provided as a list of length " +
                                               std::to_string(headDims.size()) + ", but the Cache currently has " +
                                               std::to_string(m_layers.size()) + " layers");
    }
    for (size_t index = 0; index < m_layers.size(); ++index) {
        // A zero-length sequence carries shape, dtype and device without allocating, as in the reference.
        at::Tensor fake = at::zeros({batchSize, numHeads[index], 0, headDims[index]},
                                    at::TensorOptions().dtype(dtype).device(device));
        if (AttentionLayer* attention = m_layers[index]->asAttention()) {
            attention->lazyInitialization(fake, fake);
        } else if (LinearAttentionLayer* linear = m_layers[index]->asLinearAttention()) {
            linear->lazyInitialization(fake, fake);
        }
    }
}

const AttentionLayer& Cache::attentionLayerFor(int64_t layerIdx, const char* operation) const {
    const size_t index = resolveIndex(layerIdx, operation);
    if (const AttentionLayer* attention = m_layers[index]->asAttention()) {
        return *attention;
    }
    if (layerIdx != 0) {
        throw CacheError(ErrorKind::Value, std::string("You called `") + operation + "` on layer index " +
                                               std::to_string(layerIdx) +
                                               ", but this layer is a LinearAttention layer, which does not track "
                                               "sequence length.");
    }
    for (const auto& layer : m_layers) {
        if (const AttentionLayer* attention = layer->asAttention()) {
            return *attention;
        }
    }
    throw CacheError(ErrorKind::Value, std::string("`") + operation +
                                           "` can only be called on Attention layers, and the current Cache seem to "
                                           "only contain LinearAttention layers.");
}

int64_t Cache::seqLength(int64_t layerIdx) const {
    if (layerIdx >= static_cast<int64_t>(m_layers.size())) {
        return 0;
    }
    return attentionLayerFor(layerIdx, "get_seq_length").seqLength();
}

bool Cache::hasPreviousState(std::optional<int64_t> layerIdx) const {
    if (layerIdx && *layerIdx >= static_cast<int64_t>(m_layers.size())) {
        return false;
    }
    if (!layerIdx) {
        for (auto it = m_layers.rbegin(); it != m_layers.rend(); ++it) {
            if (const LinearAttentionLayer* linear = (*it)->asLinearAttention()) {
                return linear->hasPreviousState();
            }
        }
        throw CacheError(ErrorKind::Value, "`has_previous_state` can only be called on LinearAttention layers, and "
                                           "the current Cache seem to only contain Attention layers.");
    }
    const size_t index = resolveIndex(*layerIdx, "has_previous_state");
    const LinearAttentionLayer* linear = m_layers[index]->asLinearAttention();
    if (linear == nullptr) {
        throw CacheError(ErrorKind::Value, "You called `has_previous_state` on layer index " + std::to_string(*layerIdx) +
                                               ", but this layer is an Attention layer, which does not support "
                                               "calling it.");
    }
    return linear->hasPreviousState();
}

MaskSizes Cache::maskSizes(int64_t queryLength, int64_t layerIdx) const {
    const MaskSizes sizes = computeMaskSizes(queryLength, layerIdx);
    if (isTracing()) {
        // Filed under the layer asked about (negative indices resolved), even where a linear-attention
        // layer redirected the question to the first attention layer.
        const int64_t layer = layerIdx < 0 ? layerIdx + static_cast<int64_t>(m_layers.size()) : layerIdx;
        m_emitter.emit(static_cast<int32_t>(layer), trace::MaskSizesEvent{queryLength, sizes.kvLength, sizes.kvOffset});
    }
    return sizes;
}

MaskSizes Cache::computeMaskSizes(int64_t queryLength, int64_t layerIdx) const {
    if (layerIdx >= static_cast<int64_t>(m_layers.size())) {
        return {queryLength, 0};
    }
    return attentionLayerFor(layerIdx, "get_mask_sizes").maskSizes(queryLength);
}

int64_t Cache::maxCacheShape(int64_t layerIdx) const {
    if (layerIdx >= static_cast<int64_t>(m_layers.size())) {
        return -1;
    }
    const size_t index = resolveIndex(layerIdx, "get_max_cache_shape");
    const AttentionLayer* attention = m_layers[index]->asAttention();
    if (attention == nullptr) {
        throw CacheError(ErrorKind::Attribute, "layer " + std::to_string(layerIdx) + " is a " +
                                                   m_layers[index]->typeName() + ", which has no maximum cache shape");
    }
    return attention->maxCacheShape();
}

void Cache::reset() {
    if (isTracing()) {
        drainTransfers();
    }
    for (auto& layer : m_layers) {
        layer->reset();
    }
    if (isTracing()) {
        m_emitter.emit(-1, trace::ResetEvent{});
        emitAllMemory();
    }
}

void Cache::reorder(const at::Tensor& beamIdx) {
    if (isTracing()) {
        drainTransfers();
    }
    for (auto& layer : m_layers) {
        layer->reorder(beamIdx);
    }
    if (isTracing()) {
        m_emitter.emit(-1, trace::ReorderEvent{CacheTracer::indicesOf(beamIdx)});
        emitAllMemory();
    }
}

template <typename CropLayer> void Cache::cropEveryLayer(int64_t argument, CropLayer&& cropLayer) {
    if (!isTracing()) {
        for (auto& layer : m_layers) {
            cropLayer(*layer);
        }
        return;
    }
    drainTransfers();
    // Per layer: a refusal part-way leaves the layers before it cropped, and their events say so.
    for (size_t index = 0; index < m_layers.size(); ++index) {
        CacheLayer& layer = *m_layers[index];
        const CacheTracer::Before before = m_tracer->probe(index, layer);
        cropLayer(layer);
        m_tracer->emitCrop(index, layer, before, argument);
        m_tracer->emitMemory(index, layer, isOffloaded(index));
    }
    m_tracer->emitTotalsIfChanged();
}

void Cache::crop(int64_t maxLength) {
    cropEveryLayer(maxLength, [maxLength](CacheLayer& layer) { layer.crop(maxLength); });
}

void Cache::cropTokens(int64_t tokensToRemove) {
    // The Crop event's field keeps the seed's meaning (a negative count removes that many tokens; the
    // lengths before and after say what happened either way).
    cropEveryLayer(tokensToRemove, [tokensToRemove](CacheLayer& layer) { layer.cropTokens(tokensToRemove); });
}

void Cache::activatePastRecording() {
    for (auto& layer : m_layers) {
        layer->activatePastRecording();
    }
}

at::Tensor Cache::updateIndexer(const at::Tensor& indexerKeyStates, int64_t layerIdx) {
    const size_t index = resolveIndex(layerIdx, "update_indexer");
    AttentionLayer* attention = m_layers[index]->asAttention();
    IndexedLayer* indexed = attention == nullptr ? nullptr : attention->asIndexed();
    if (indexed == nullptr) {
        throw CacheError(ErrorKind::Value, "Cannot call `update_indexer` on layer " + std::to_string(layerIdx) +
                                               " which is a " + m_layers[index]->typeName() +
                                               "; it has no indexer key cache (expected a DynamicIndexedLayer or "
                                               "StaticIndexedLayer: layer type `indexed_attention`)");
    }
    return indexed->updateIndexer(indexerKeyStates);
}

void Cache::batchRepeatInterleave(int64_t repeats) {
    const bool tracing = isTracing();
    if (tracing) {
        drainTransfers();
    }
    const int64_t batchBefore = tracing ? CacheTracer::batchSizeOf(m_layers) : 0;
    for (auto& layer : m_layers) {
        layer->batchRepeatInterleave(repeats);
    }
    if (tracing) {
        m_emitter.emit(-1, trace::BatchRepeatEvent{repeats, batchBefore, CacheTracer::batchSizeOf(m_layers)});
        emitAllMemory();
    }
}

void Cache::batchSelectIndices(const at::Tensor& indices) {
    const bool tracing = isTracing();
    if (tracing) {
        drainTransfers();
    }
    const int64_t batchBefore = tracing ? CacheTracer::batchSizeOf(m_layers) : 0;
    for (auto& layer : m_layers) {
        layer->batchSelectIndices(indices);
    }
    if (tracing) {
        m_emitter.emit(-1, trace::BatchSelectEvent{CacheTracer::indicesOf(indices), batchBefore,
                                                   CacheTracer::batchSizeOf(m_layers)});
        emitAllMemory();
    }
}

int64_t Cache::maxBatchSize() const {
    if (m_layers.empty()) {
        throw CacheError(ErrorKind::Index, "max_batch_size: the cache has no layers yet");
    }
    std::set<int64_t> sizes;
    std::string values;
    for (const auto& layer : m_layers) {
        std::optional<int64_t> size;
        if (const AttentionLayer* attention = layer->asAttention()) {
            size = attention->maxBatchSize();
        }
        // Hybrid layers get `max_batch_size` from their conv state, as pure linear-attention ones do.
        if (const LinearAttentionLayer* linear = layer->asLinearAttention(); !size && linear != nullptr) {
            size = linear->convBatchSize();
        }
        if (!size) {
            throw CacheError(ErrorKind::Attribute, "'" + layer->typeName() +
                                                       "' object has no attribute 'max_batch_size' (only initialised "
                                                       "static and linear-attention layers have one)");
        }
        sizes.insert(*size);
        values += (values.empty() ? "" : ", ") + std::to_string(*size);
    }
    if (sizes.size() > 1) {
        throw CacheError(ErrorKind::Value, "Max batch size is not consistent across layers: [" + values + "]");
    }
    return *sizes.begin();
}

int64_t Cache::maxCacheLen() const {
    if (m_layers.empty()) {
        throw CacheError(ErrorKind::Value, "max_cache_len: the cache has no layers (max() arg is an empty sequence)");
    }
    int64_t longest = 0;
    for (const auto& layer : m_layers) {
        const AttentionLayer* attention = layer->asAttention();
        std::optional<int64_t> length = attention ? attention->maxCacheLen() : std::nullopt;
        if (!length) {
            throw CacheError(ErrorKind::Attribute, "'" + layer->typeName() +
                                                       "' object has no attribute 'max_cache_len' (only static layers "
                                                       "have one)");
        }
        longest = std::max(longest, *length);
    }
    return longest;
}

bool Cache::isCompileable() const {
    if (m_layers.empty()) {
        return false;
    }
    return std::all_of(m_layers.begin(), m_layers.end(), [](const auto& layer) { return layer->isCompileable(); });
}

bool Cache::isInitialized() const {
    if (m_layers.empty()) {
        return false;
    }
    for (const auto& layer : m_layers) {
        const AttentionLayer* attention = layer->asAttention();
        if (attention == nullptr) {
            throw CacheError(ErrorKind::Attribute, "'" + layer->typeName() +
                                                       "' object has no attribute 'is_initialized' (the reference "
                                                       "tracks it for attention layers only)");
        }
        if (!attention->isInitialized()) {
            return false;
        }
    }
    return true;
}

std::vector<bool> Cache::isSliding() const {
    std::vector<bool> sliding;
    sliding.reserve(m_layers.size());
    for (const auto& layer : m_layers) {
        sliding.push_back(layer->isSliding());
    }
    return sliding;
}

} // namespace kvscope::cache
