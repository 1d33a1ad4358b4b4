#include "kvscope/cache/Cache.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/LinearAttentionLayer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

namespace kvscope::cache {

Cache::Cache(std::vector<std::unique_ptr<CacheLayer>> layers, bool offloading, bool offloadOnlyNonSliding)
    : m_layers(std::move(layers)), m_offloading(offloading), m_offloadOnlyNonSliding(offloadOnlyNonSliding) {}

Cache::Cache(LayerFactory layerToReplicate, bool offloading, bool offloadOnlyNonSliding)
    : m_layerToReplicate(std::move(layerToReplicate)), m_offloading(offloading),
      m_offloadOnlyNonSliding(offloadOnlyNonSliding) {
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
    const std::vector<bool> sliding = isSliding();
    const auto count = static_cast<int64_t>(sliding.size());
    if (!m_offloadOnlyNonSliding) {
        return layerIdx < count ? layerIdx : 0;
    }
    for (int64_t index = std::max<int64_t>(layerIdx, 0); index < count; ++index) {
        if (!sliding[static_cast<size_t>(index)]) {
            return index;
        }
    }
    for (int64_t index = 0; index < count; ++index) {
        if (!sliding[static_cast<size_t>(index)]) {
            return index;
        }
    }
    return std::nullopt;
}

bool Cache::offloadsAfterUpdate(int64_t layerIdx) const {
    return !(m_offloadOnlyNonSliding && m_layers.at(static_cast<size_t>(layerIdx))->isSliding());
}

KeyValueStates Cache::update(const at::Tensor& keyStates, const at::Tensor& valueStates, int64_t layerIdx) {
    if (m_layerToReplicate) {
        while (static_cast<int64_t>(m_layers.size()) <= layerIdx) {
            m_layers.push_back(m_layerToReplicate());
        }
    }
    const size_t index = resolveIndex(layerIdx, "update");
    AttentionLayer* attention = m_layers[index]->asAttention();
    if (attention == nullptr) {
        throw CacheError(ErrorKind::Attribute, "layer " + std::to_string(layerIdx) + " is a " +
                                                   m_layers[index]->typeName() +
                                                   ", which has no key/value `update`; use updateConvState / "
                                                   "updateRecurrentState");
    }
    if (m_offloading) {
        // The reference makes the compute stream wait for the prefetch stream here; transfers on CPU
        // are synchronous, so the wait is implicit.
        if (auto target = prefetchTarget(static_cast<int64_t>(index) + 1)) {
            m_layers[static_cast<size_t>(*target)]->prefetch();
        }
    }
    KeyValueStates states = attention->update(keyStates, valueStates);
    if (m_offloading && offloadsAfterUpdate(static_cast<int64_t>(index))) {
        m_layers[index]->offload();
    }
    return states;
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
    return linear->updateRecurrentState(recurrentStates);
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
    for (auto& layer : m_layers) {
        layer->reset();
    }
}

void Cache::reorder(const at::Tensor& beamIdx) {
    for (auto& layer : m_layers) {
        layer->reorder(beamIdx);
    }
}

void Cache::crop(int64_t maxLength) {
    for (auto& layer : m_layers) {
        layer->crop(maxLength);
    }
}

void Cache::batchRepeatInterleave(int64_t repeats) {
    for (auto& layer : m_layers) {
        layer->batchRepeatInterleave(repeats);
    }
}

void Cache::batchSelectIndices(const at::Tensor& indices) {
    for (auto& layer : m_layers) {
        layer->batchSelectIndices(indices);
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
        } else if (const LinearAttentionLayer* linear = layer->asLinearAttention()) {
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
