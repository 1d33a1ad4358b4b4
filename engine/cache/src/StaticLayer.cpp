// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticLayer.h"

#include "BatchIndex.h"
#include "TokenCopy.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/SequenceBuffer.h"

#include <ATen/ATen.h>

namespace kvscope::cache {

StaticLayer::StaticLayer(int64_t maxCacheLen) : m_maxCacheLen(maxCacheLen) {
    if (maxCacheLen < 1) {
        throw CacheError(ErrorKind::Value, "max_cache_len must be >= 1, got " + std::to_string(maxCacheLen));
    }
}

void StaticLayer::allocate(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    m_keys = at::zeros({m_batch, m_heads, m_maxCacheLen, keyStates.size(3)}, keyStates.options());
    m_values = at::zeros({m_batch, m_heads, m_maxCacheLen, valueStates.size(3)}, valueStates.options());
}

void StaticLayer::lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    m_device = keyStates.device();
    m_batch = keyStates.size(0);
    m_heads = keyStates.size(1);
    allocate(keyStates, valueStates);
    m_initialized = true;
}

void StaticLayer::checkStates(const at::Tensor& keyStates, const at::Tensor& valueStates) const {
    checkSameSequenceShape(m_keys, keyStates, "keys");
    checkSameSequenceShape(m_values, valueStates, "values");
    if (keyStates.size(2) != valueStates.size(2)) {
        throw CacheError(ErrorKind::Value, "key_states and value_states must hold the same number of tokens, got " +
                                               std::to_string(keyStates.size(2)) + " and " +
                                               std::to_string(valueStates.size(2)));
    }
}

KeyValueStates StaticLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    if (!m_initialized) {
        lazyInitialization(keyStates, valueStates);
    }
    checkStates(keyStates, valueStates);
    const int64_t tokens = keyStates.size(2);
    if (m_cumulativeLength + tokens > m_maxCacheLen) {
        // Refused before anything changes (the reference advances its counter, then fails).
        throw CacheError(ErrorKind::Index, "index_copy_(): index " + std::to_string(std::max(m_cumulativeLength, m_maxCacheLen)) +
                                               " is out of bounds for dimension 2 with size " +
                                               std::to_string(m_maxCacheLen) + ": the layer holds " +
                                               std::to_string(m_cumulativeLength) + " tokens, " + std::to_string(tokens) +
                                               " more do not fit in max_cache_len " + std::to_string(m_maxCacheLen));
    }
    copyTokens(m_keys, m_cumulativeLength, keyStates);
    copyTokens(m_values, m_cumulativeLength, valueStates);
    m_cumulativeLength += tokens;
    return {m_keys, m_values};
}

std::optional<int64_t> StaticLayer::maxBatchSize() const {
    if (!m_initialized) {
        return std::nullopt;
    }
    return m_batch;
}

void StaticLayer::reset() {
    if (m_initialized) {
        m_keys.zero_();
        m_values.zero_();
    }
    m_cumulativeLength = 0;
}

void StaticLayer::reorder(const at::Tensor& beamIdx) {
    if (seqLength() <= 0) {
        return;
    }
    at::Tensor index = checkedBeamIndex(beamIdx, m_keys.size(0), m_keys.device());
    auto [keys, values] = ownedBuffers();
    keys = keys.index_select(0, index);
    values = values.index_select(0, index);
    m_batch = keys.size(0);
    buffersMoved();
}

void StaticLayer::refuseUnsupported(const char* operation) const {
    throw CacheError(ErrorKind::Attribute, "'" + typeName() + "' object has no attribute '" + operation +
                                               "': static layers are preallocated; use a DynamicLayer, "
                                               "DynamicSlidingWindowLayer or QuantizedLayer for " + operation);
}

void StaticLayer::crop(int64_t) { refuseUnsupported("crop"); }
void StaticLayer::batchRepeatInterleave(int64_t) { refuseUnsupported("batch_repeat_interleave"); }
void StaticLayer::batchSelectIndices(const at::Tensor&) { refuseUnsupported("batch_select_indices"); }

void StaticLayer::offload() {
    if (m_initialized) {
        auto [keys, values] = ownedBuffers();
        keys = keys.to(at::kCPU, /*non_blocking=*/true);
        values = values.to(at::kCPU, /*non_blocking=*/true);
        buffersMoved();
    }
}

void StaticLayer::prefetch() {
    if (m_initialized && m_keys.device() != *m_device) {
        auto [keys, values] = ownedBuffers();
        keys = keys.to(*m_device, /*non_blocking=*/true);
        values = values.to(*m_device, /*non_blocking=*/true);
        buffersMoved();
    }
}

int64_t StaticLayer::storedBytes() const {
    if (!m_initialized) {
        return 0;
    }
    return static_cast<int64_t>(m_keys.numel() * m_keys.element_size() + m_values.numel() * m_values.element_size());
}

std::optional<at::Device> StaticLayer::currentDevice() const {
    if (m_initialized) {
        return m_keys.device();
    }
    return m_device;
}

} // namespace kvscope::cache
