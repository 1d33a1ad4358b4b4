// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/EncoderDecoderCache.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DynamicCache.h"

namespace kvscope::cache {

EncoderDecoderCache::EncoderDecoderCache(std::unique_ptr<Cache> selfAttentionCache,
                                         std::unique_ptr<Cache> crossAttentionCache)
    : m_selfAttention(std::move(selfAttentionCache)), m_crossAttention(std::move(crossAttentionCache)) {
    if (!m_selfAttention || !m_crossAttention) {
        throw CacheError(ErrorKind::Type, "One of the two arguments is not a Cache (null)");
    }
    for (size_t index = 0; index < m_crossAttention->size(); ++index) {
        const auto layerIdx = static_cast<int64_t>(index);
        m_isUpdated[layerIdx] = m_crossAttention->seqLength(layerIdx) > 0;
    }
}

bool EncoderDecoderCache::isUpdated(int64_t layerIdx) const {
    auto it = m_isUpdated.find(layerIdx);
    return it != m_isUpdated.end() && it->second;
}

MaskSizes EncoderDecoderCache::maskSizes(int64_t queryLength, int64_t layerIdx) const {
    return m_selfAttention->maskSizes(queryLength, layerIdx);
}

void EncoderDecoderCache::reset() {
    m_selfAttention->reset();
    m_crossAttention->reset();
    for (auto& entry : m_isUpdated) {
        entry.second = false;
    }
}

void EncoderDecoderCache::reorder(const at::Tensor& beamIdx) {
    m_selfAttention->reorder(beamIdx);
    m_crossAttention->reorder(beamIdx);
}

void EncoderDecoderCache::checkDynamicCache(const char* method) const {
    if (dynamic_cast<const DynamicCache*>(m_selfAttention.get()) == nullptr ||
        dynamic_cast<const DynamicCache*>(m_crossAttention.get()) == nullptr) {
        throw CacheError(ErrorKind::Type, std::string("`") + method + "` is only defined for dynamic cache, got " +
                                              m_selfAttention->typeName() + " for the self attention cache and " +
                                              m_crossAttention->typeName() + " for the cross attention cache.");
    }
}

void EncoderDecoderCache::crop(int64_t maximumLength) {
    checkDynamicCache("crop");
    m_selfAttention->crop(maximumLength);
}

void EncoderDecoderCache::batchRepeatInterleave(int64_t repeats) {
    checkDynamicCache("batch_repeat_interleave");
    m_selfAttention->batchRepeatInterleave(repeats);
    m_crossAttention->batchRepeatInterleave(repeats);
}

void EncoderDecoderCache::batchSelectIndices(const at::Tensor& indices) {
    checkDynamicCache("batch_select_indices");
    m_selfAttention->batchSelectIndices(indices);
    m_crossAttention->batchSelectIndices(indices);
}

} // namespace kvscope::cache
