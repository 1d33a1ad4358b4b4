// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticIndexedLayer.h"

#include "BatchIndex.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::cache {

at::Tensor StaticIndexedLayer::updateIndexer(const at::Tensor& indexerKeyStates) {
    if (indexerKeyStates.dim() != 3) {
        throw CacheError(ErrorKind::Value, "indexer_key_states must be [batch, tokens, index_head_dim] (3-D), got " +
                                               std::to_string(indexerKeyStates.dim()) + " dimensions");
    }
    if (!m_indexerKeys.defined()) {
        m_indexerKeys = at::zeros({indexerKeyStates.size(0), m_maxCacheLen, indexerKeyStates.size(2)},
                                  indexerKeyStates.options());
    }
    const int64_t tokens = indexerKeyStates.size(1);
    if (indexerKeyStates.size(0) != m_indexerKeys.size(0) || indexerKeyStates.size(2) != m_indexerKeys.size(2)) {
        throw CacheError(ErrorKind::Runtime, "the indexer buffer is [" + std::to_string(m_indexerKeys.size(0)) + ", " +
                                                 std::to_string(m_maxCacheLen) + ", " +
                                                 std::to_string(m_indexerKeys.size(2)) +
                                                 "]: new indexer keys must have its batch and index_head_dim");
    }
    if (m_indexerLength + tokens > m_maxCacheLen) {
        // The release's index_copy_ fails on the out-of-range position.
        throw CacheError(ErrorKind::Index, "the indexer holds " + std::to_string(m_indexerLength) + " of " +
                                               std::to_string(m_maxCacheLen) + " positions; " +
                                               std::to_string(tokens) +
                                               " more do not fit: build the cache with a larger max_cache_len");
    }
    m_indexerKeys.narrow(1, m_indexerLength, tokens).copy_(indexerKeyStates);
    m_indexerLength += tokens;
    return m_indexerKeys;
}

void StaticIndexedLayer::reset() {
    StaticLayer::reset();
    if (m_indexerKeys.defined()) {
        m_indexerKeys.zero_();
    }
    m_indexerLength = 0;
}

void StaticIndexedLayer::reorder(const at::Tensor& beamIdx) {
    StaticLayer::reorder(beamIdx);
    if (m_indexerKeys.defined() && m_indexerKeys.numel() > 0) {
        m_indexerKeys =
            m_indexerKeys.index_select(0, checkedBeamIndex(beamIdx, m_indexerKeys.size(0), m_indexerKeys.device()));
    }
}

int64_t StaticIndexedLayer::storedBytes() const {
    return StaticLayer::storedBytes() +
           (m_indexerKeys.defined() ? m_indexerKeys.numel() * m_indexerKeys.element_size() : 0);
}

} // namespace kvscope::cache
