// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ModelCache.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/EncoderDecoderCache.h"
#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>

namespace kvscope::model {

ModelCache::ModelCache(std::unique_ptr<cache::Cache> decoderCache) : m_decoder(std::move(decoderCache)) {
    if (!m_decoder) {
        throw ModelError("a ModelCache needs a cache, got null");
    }
}

ModelCache::ModelCache(std::unique_ptr<cache::EncoderDecoderCache> encoderDecoderCache)
    : m_encoderDecoder(std::move(encoderDecoderCache)) {
    if (!m_encoderDecoder) {
        throw ModelError("a ModelCache needs a cache, got null");
    }
}

ModelCache::~ModelCache() = default;

cache::Cache& ModelCache::selfAttention() {
    return m_encoderDecoder ? m_encoderDecoder->selfAttentionCache() : *m_decoder;
}

const cache::Cache& ModelCache::selfAttention() const {
    return m_encoderDecoder ? m_encoderDecoder->selfAttentionCache() : *m_decoder;
}

std::vector<const cache::Cache*> ModelCache::caches() const {
    if (m_encoderDecoder) {
        return {&m_encoderDecoder->selfAttentionCache(), &m_encoderDecoder->crossAttentionCache()};
    }
    return {m_decoder.get()};
}

int64_t ModelCache::seqLength() const { return selfAttention().seqLength(0); }

int64_t ModelCache::evictedTokens(int64_t layer) const {
    const auto found = m_evicted.find(layer);
    return found == m_evicted.end() ? 0 : found->second;
}

void ModelCache::addEvictedTokens(int64_t layer, int64_t tokens) { m_evicted[layer] += tokens; }

const at::Tensor& ModelCache::maskedSlots(int64_t layer) const {
    static const at::Tensor none;
    const auto found = m_masked.find(layer);
    return found == m_masked.end() ? none : found->second;
}

void ModelCache::setMaskedSlots(int64_t layer, at::Tensor masked) {
    m_masked[layer] = std::move(masked);
}

void ModelCache::reorder(const at::Tensor& beamIdx) {
    if (m_encoderDecoder) {
        m_encoderDecoder->reorder(beamIdx);
    } else {
        m_decoder->reorder(beamIdx);
    }
}

void ModelCache::crop(int64_t maxLength) {
    const std::string refusal = cropRefusal(maxLength);
    if (!refusal.empty()) {
        throw ModelError(refusal);
    }
    if (m_encoderDecoder) {
        m_encoderDecoder->crop(maxLength);
    } else {
        m_decoder->crop(maxLength);
    }
}

void ModelCache::batchRepeatInterleave(int64_t repeats) {
    const std::string refusal = batchResizeRefusal();
    if (!refusal.empty()) {
        throw ModelError(refusal);
    }
    if (m_encoderDecoder) {
        m_encoderDecoder->batchRepeatInterleave(repeats);
    } else {
        m_decoder->batchRepeatInterleave(repeats);
    }
}

void ModelCache::reset() {
    m_evicted.clear();
    m_masked.clear();
    if (m_encoderDecoder) {
        m_encoderDecoder->reset();
    } else {
        m_decoder->reset();
    }
}

std::string ModelCache::batchResizeRefusal() const {
    for (const cache::Cache* cache : caches()) {
        if (m_encoderDecoder && cache->typeName() != "DynamicCache") {
            return "an encoder-decoder cache can change its batch only when both halves are DynamicCache (the "
                   "reference's rule); this one holds a " +
                   cache->typeName();
        }
        for (size_t index = 0; index < cache->size(); ++index) {
            const cache::CacheLayer& layer = cache->layer(index);
            if (layer.asLinearAttention() != nullptr) {
                return "layer " + std::to_string(index) + " is a " + layer.typeName() +
                       ", which has no batch_repeat_interleave in the reference";
            }
            const cache::AttentionLayer* attention = layer.asAttention();
            if (attention != nullptr && attention->maxCacheLen().has_value()) {
                return "layer " + std::to_string(index) + " is a " + layer.typeName() +
                       ", which has no batch_repeat_interleave in the reference";
            }
        }
    }
    return {};
}

std::string ModelCache::cropRefusal(int64_t maxLength) const {
    if (pressed()) {
        return "a cache press removed tokens, so cache slots no longer match positions and cannot be cut back";
    }
    for (const auto& [layer, slots] : m_masked) {
        // Tokens past the masked slots come and go freely; the masked ones are the press's decision.
        if (maxLength < slots.size(2)) {
            return "a masking press (adakv) decided per head over layer " + std::to_string(layer) +
                   "'s first " + std::to_string(slots.size(2)) + " slots; the cache cannot be cut back to " +
                   std::to_string(maxLength) + ", inside them";
        }
    }
    const cache::Cache& self = selfAttention();
    if (m_encoderDecoder && self.typeName() != "DynamicCache") {
        return "an encoder-decoder cache can crop only a DynamicCache (the reference's rule); this one holds a " +
               self.typeName();
    }
    for (size_t index = 0; index < self.size(); ++index) {
        const cache::CacheLayer& layer = self.layer(index);
        if (layer.asLinearAttention() != nullptr) {
            return "layer " + std::to_string(index) + " is a " + layer.typeName() +
                   ": its linear-attention state sums every token seen and cannot be cut back (the reference's "
                   "crop leaves it unchanged)";
        }
        const cache::AttentionLayer* attention = layer.asAttention();
        if (attention == nullptr) {
            continue;
        }
        if (attention->maxCacheLen().has_value()) {
            return "layer " + std::to_string(index) + " is a " + layer.typeName() +
                   ": static caches cannot crop (the reference has no crop for them); use a dynamic, quantized or "
                   "offloaded cache to rewind";
        }
        const int64_t window = attention->maxCacheShape();
        if (layer.isSliding() && window > 0 && attention->seqLength() >= window) {
            return "layer " + std::to_string(index) + " is a " + layer.typeName() + " with window " +
                   std::to_string(window) + " that has seen " + std::to_string(attention->seqLength()) +
                   " tokens: the tokens it evicted cannot be restored, so it cannot crop";
        }
    }
    return {};
}

} // namespace kvscope::model
