// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicIndexedLayer.h"

#include "BatchIndex.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::cache {
namespace {

void checkIndexerShape(const at::Tensor& states, const at::Tensor& held) {
    if (states.dim() != 3) {
        throw CacheError(ErrorKind::Value, "indexer_key_states must be [batch, tokens, index_head_dim] (3-D), got " +
                                               std::to_string(states.dim()) + " dimensions");
    }
    if (held.defined() && held.numel() > 0 &&
        (held.size(0) != states.size(0) || held.size(2) != states.size(2))) {
        throw CacheError(ErrorKind::Runtime, "Sizes of tensors must match except in dimension 1: the indexer holds [" +
                                                 std::to_string(held.size(0)) + ", _, " + std::to_string(held.size(2)) +
                                                 "], the new keys are [" + std::to_string(states.size(0)) + ", _, " +
                                                 std::to_string(states.size(2)) + "]");
    }
}

} // namespace

at::Tensor DynamicIndexedLayer::updateIndexer(const at::Tensor& indexerKeyStates) {
    checkIndexerShape(indexerKeyStates, m_indexerKeys);
    m_indexerKeys = hasIndexerKeys() ? at::cat({m_indexerKeys, indexerKeyStates}, 1) : indexerKeyStates.clone();
    return m_indexerKeys;
}

void DynamicIndexedLayer::reset() {
    DynamicLayer::reset();
    m_indexerKeys = at::Tensor();
}

void DynamicIndexedLayer::reorder(const at::Tensor& beamIdx) {
    DynamicLayer::reorder(beamIdx);
    if (hasIndexerKeys()) {
        m_indexerKeys =
            m_indexerKeys.index_select(0, checkedBeamIndex(beamIdx, m_indexerKeys.size(0), m_indexerKeys.device()));
    }
}

void DynamicIndexedLayer::crop(int64_t maxLength) {
    DynamicLayer::crop(maxLength);
    if (!hasIndexerKeys()) {
        return;
    }
    // The seed's meaning of the argument, on the indexer's own length.
    const int64_t length = m_indexerKeys.size(1);
    const int64_t keep = maxLength >= 0 ? std::min(maxLength, length) : std::max<int64_t>(length + maxLength, 0);
    m_indexerKeys = m_indexerKeys.narrow(1, 0, keep);
}

void DynamicIndexedLayer::cropTokens(int64_t tokensToRemove) {
    DynamicLayer::cropTokens(tokensToRemove);
    if (!hasIndexerKeys()) {
        return;
    }
    const int64_t length = m_indexerKeys.size(1);
    const int64_t remove = releaseTokensToRemove(tokensToRemove, length);
    m_indexerKeys = m_indexerKeys.narrow(1, 0, std::max<int64_t>(length - remove, 0));
}

void DynamicIndexedLayer::batchRepeatInterleave(int64_t repeats) {
    DynamicLayer::batchRepeatInterleave(repeats);
    if (hasIndexerKeys()) {
        m_indexerKeys = m_indexerKeys.repeat_interleave(repeats, 0);
    }
}

void DynamicIndexedLayer::batchSelectIndices(const at::Tensor& indices) {
    DynamicLayer::batchSelectIndices(indices);
    if (hasIndexerKeys()) {
        m_indexerKeys = m_indexerKeys.index_select(
            0, checkedSelectIndex(indices, m_indexerKeys.size(0), m_indexerKeys.device()));
    }
}

void DynamicIndexedLayer::offload() {
    DynamicLayer::offload();
    if (m_indexerKeys.defined()) {
        m_indexerKeys = m_indexerKeys.to(at::kCPU, /*non_blocking=*/true);
    }
}

void DynamicIndexedLayer::prefetch() {
    DynamicLayer::prefetch();
    if (m_indexerKeys.defined() && m_device && m_indexerKeys.device() != *m_device) {
        m_indexerKeys = m_indexerKeys.to(*m_device, /*non_blocking=*/true);
    }
}

int64_t DynamicIndexedLayer::storedBytes() const {
    return DynamicLayer::storedBytes() +
           (m_indexerKeys.defined() ? m_indexerKeys.numel() * m_indexerKeys.element_size() : 0);
}

} // namespace kvscope::cache
