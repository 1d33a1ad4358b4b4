// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicLayer.h"

#include "BatchIndex.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::cache {

void DynamicLayer::lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    m_device = keyStates.device();
    m_keys.clear();
    m_values.clear();
    m_initialized = true;
}

KeyValueStates DynamicLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    if (m_keys.hasShape()) {
        checkSameSequenceShape(m_keys.storage(), keyStates, "keys");
        checkSameSequenceShape(m_values.storage(), valueStates, "values");
    }
    if (keyStates.size(2) != valueStates.size(2)) {
        throw CacheError(ErrorKind::Value, "key_states and value_states must hold the same number of tokens, got " +
                                               std::to_string(keyStates.size(2)) + " and " +
                                               std::to_string(valueStates.size(2)));
    }
    if (!m_initialized) {
        lazyInitialization(keyStates, valueStates);
    }
    return {m_keys.append(keyStates), m_values.append(valueStates)};
}

MaskSizes DynamicLayer::maskSizes(int64_t queryLength) const { return {seqLength() + queryLength, 0}; }

int64_t DynamicLayer::seqLength() const {
    // The reference returns 0 whenever the keys hold no element (an empty batch included).
    if (!m_initialized || !m_keys.hasShape() || m_keys.tokenElements() == 0) {
        return 0;
    }
    return m_keys.length();
}

void DynamicLayer::reset() {
    // The reference zeroes the tensors in place: the length stays, the contents become zeros.
    m_keys.zero();
    m_values.zero();
}

void DynamicLayer::reorder(const at::Tensor& beamIdx) {
    if (seqLength() <= 0) {
        return;
    }
    at::Tensor index = checkedBeamIndex(beamIdx, m_keys.storage().size(0), m_keys.storage().device());
    m_keys.assign(m_keys.view().index_select(0, index));
    m_values.assign(m_values.view().index_select(0, index));
}

int64_t DynamicLayer::storedLengthForCrop(ErrorKind uninitialisedKind) const {
    if (!m_initialized) {
        throw CacheError(uninitialisedKind, typeName() + " holds no states yet (no update so far): nothing to crop");
    }
    if (!m_keys.hasShape()) {
        throw CacheError(ErrorKind::Index,
                         typeName() + " holds an empty one-dimensional state: a negative crop cannot index it");
    }
    return m_keys.length();
}

void DynamicLayer::crop(int64_t maxLength) {
    if (maxLength < 0) {
        maxLength = seqLength() - (-maxLength);
    }
    if (seqLength() <= maxLength) {
        return;
    }
    // Python subscripts `None` here: a TypeError.
    const int64_t stored = storedLengthForCrop(ErrorKind::Type);
    // Python slicing `[..., :maxLength, :]`: a still-negative length counts from the end (the reference's
    // quirk: crop(-5) on 3 tokens keeps 1).
    const int64_t keep = maxLength >= 0 ? std::min(maxLength, stored) : std::max<int64_t>(stored + maxLength, 0);
    m_keys.truncate(keep);
    m_values.truncate(keep);
}

int64_t DynamicLayer::releaseTokensToRemove(int64_t tokensToRemove, int64_t length) {
    if (tokensToRemove > 0) {
        // The deprecated absolute size: nothing to do when the layer is not longer than it.
        return tokensToRemove >= length ? 0 : length - tokensToRemove;
    }
    return -tokensToRemove;
}

void DynamicLayer::cropTokens(int64_t tokensToRemove) {
    const int64_t remove = releaseTokensToRemove(tokensToRemove, seqLength());
    if (remove == 0) {
        return;
    }
    // Python subscripts `None` here: a TypeError. `[..., :-n, :]` past the start empties the layer.
    const int64_t stored = storedLengthForCrop(ErrorKind::Type);
    const int64_t keep = std::max<int64_t>(stored - remove, 0);
    m_keys.truncate(keep);
    m_values.truncate(keep);
}

void DynamicLayer::batchRepeatInterleave(int64_t repeats) {
    if (seqLength() <= 0) {
        return;
    }
    if (repeats < 0) {
        throw CacheError(ErrorKind::Runtime, "repeats must be >= 0, got " + std::to_string(repeats));
    }
    m_keys.assign(m_keys.view().repeat_interleave(repeats, 0));
    m_values.assign(m_values.view().repeat_interleave(repeats, 0));
}

void DynamicLayer::batchSelectIndices(const at::Tensor& indices) {
    if (seqLength() <= 0) {
        return;
    }
    at::Tensor index = checkedSelectIndex(indices, m_keys.storage().size(0), m_keys.storage().device());
    m_keys.assign(m_keys.view().index_select(0, index));
    m_values.assign(m_values.view().index_select(0, index));
}

void DynamicLayer::keepTokens(const at::Tensor& indices) {
    if (!m_initialized || !m_keys.hasShape()) {
        throw CacheError(ErrorKind::Runtime, typeName() + " holds no states yet: there is nothing to keep");
    }
    const at::Tensor rows = indices.to(m_keys.storage().device()).unsqueeze(-1);
    m_keys.assign(m_keys.view().gather(2, rows.expand({-1, -1, -1, m_keys.view().size(3)})));
    m_values.assign(m_values.view().gather(2, rows.expand({-1, -1, -1, m_values.view().size(3)})));
}

void DynamicLayer::rewriteKeys(const at::Tensor& keys) {
    if (!m_initialized || !m_keys.hasShape()) {
        throw CacheError(ErrorKind::Runtime,
                         typeName() + " holds no states yet: there are no keys to rewrite");
    }
    if (keys.sizes() != m_keys.view().sizes()) {
        throw CacheError(ErrorKind::Runtime, typeName() + ": rewritten keys must keep the stored shape");
    }
    m_keys.assign(keys.to(m_keys.storage().device(), m_keys.storage().scalar_type()).contiguous());
}

void DynamicLayer::offload() {
    if (m_initialized) {
        m_keys.moveTo(at::kCPU, /*nonBlocking=*/true);
        m_values.moveTo(at::kCPU, /*nonBlocking=*/true);
    }
}

void DynamicLayer::prefetch() {
    if (m_initialized && m_device) {
        m_keys.moveTo(*m_device, /*nonBlocking=*/true);
        m_values.moveTo(*m_device, /*nonBlocking=*/true);
    }
}

std::optional<at::Device> DynamicLayer::homeDevice() const { return m_device; }

std::optional<at::Device> DynamicLayer::currentDevice() const {
    if (m_keys.hasShape()) {
        return m_keys.storage().device();
    }
    return m_device;
}

} // namespace kvscope::cache
