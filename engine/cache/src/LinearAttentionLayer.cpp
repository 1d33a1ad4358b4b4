// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionLayer.h"

#include "BatchIndex.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <sstream>

namespace kvscope::cache {
namespace {

/// `target.copy_(source)` with the reference's broadcasting rule, refused cleanly when it fails.
void copyInto(at::Tensor& target, const at::Tensor& source, const char* what) {
    try {
        target.copy_(source);
    } catch (const c10::Error&) {
        std::ostringstream message;
        message << what << " of shape " << source.sizes() << " cannot be copied into the stored " << what
                << " of shape " << target.sizes() << " (shapes must match or broadcast)";
        throw CacheError(ErrorKind::Runtime, message.str());
    }
}

} // namespace

void LinearAttentionLayer::lazyInitialization(const at::Tensor& convStates, const at::Tensor& recurrentStates) {
    if (convStates.defined()) {
        if (convStates.dim() < 2) {
            throw CacheError(ErrorKind::Value, "conv_states must be [batch, channels, kernel], got " +
                                                   std::to_string(convStates.dim()) + " dimensions");
        }
        m_device = convStates.device();
        m_convKernelSize = convStates.size(-1);
        m_convStates = at::zeros_like(convStates);
    }
    if (recurrentStates.defined()) {
        // The reference takes dtype and device from the conv state; without one, the recurrent
        // state's own are the only sensible choice.
        auto options = recurrentStates.options();
        if (m_convStates.defined()) {
            options = options.dtype(m_convStates.scalar_type()).device(*m_device);
        } else {
            m_device = recurrentStates.device();
        }
        m_recurrentStates = at::zeros(recurrentStates.sizes(), options);
    }
}

at::Tensor LinearAttentionLayer::updateConvState(const at::Tensor& convStates) {
    if (!convStates.defined() || convStates.dim() < 2) {
        throw CacheError(ErrorKind::Value, "conv_states must be a tensor [batch, channels, kernel]");
    }
    if (!m_convStates.defined()) {
        lazyInitialization(convStates, at::Tensor());
    }
    if (!m_hasPreviousState) {
        copyInto(m_convStates, convStates, "conv_states");
        m_hasPreviousState = true;
        if (m_recordPast) {
            m_convHistory = m_convStates.clone();
        }
        return m_convStates;
    }
    const int64_t newTokens = convStates.size(-1);
    if (m_recordPast) {
        const at::Tensor& past = m_convHistory.defined() ? m_convHistory : m_convStates;
        m_convHistory = at::cat({past, convStates.to(past.scalar_type())}, -1);
    }
    if (newTokens >= m_convKernelSize) {
        copyInto(m_convStates, convStates.narrow(-1, newTokens - m_convKernelSize, m_convKernelSize), "conv_states");
    } else {
        at::Tensor rolled = m_convStates.roll({-newTokens}, {-1});
        at::Tensor tail = rolled.narrow(-1, m_convKernelSize - newTokens, newTokens);
        copyInto(tail, convStates, "conv_states");
        copyInto(m_convStates, rolled, "conv_states");
    }
    return m_convStates;
}

void LinearAttentionLayer::cropTokens(int64_t tokensToRemove) {
    if (!m_recordPast) {
        throw CacheError(ErrorKind::Runtime,
                         "`crop` was called, but this linear-attention layer does not track past states: call "
                         "activatePastRecording (`activate_past_recording()`) before the updates to be rolled back");
    }
    if (tokensToRemove > 0) {
        throw CacheError(ErrorKind::Runtime, "linear-attention layers can only be cropped by a negative count of "
                                             "tokens to remove (or 0), got " + std::to_string(tokensToRemove));
    }
    if (!m_convStates.defined()) {
        throw CacheError(ErrorKind::Type, "this linear-attention layer holds no conv state yet: nothing to crop");
    }
    const at::Tensor history = m_convHistory.defined() ? m_convHistory : m_convStates;
    const int64_t remove = -tokensToRemove;
    const int64_t columns = history.size(-1);
    // The window `remove` columns back: `[..., -remove - kernel : -remove]`, zeros where nothing was seen.
    const int64_t end = std::max<int64_t>(columns - remove, 0);
    const int64_t begin = std::max<int64_t>(end - m_convKernelSize, 0);
    m_convStates.zero_();
    m_convStates.narrow(-1, m_convKernelSize - (end - begin), end - begin).copy_(history.narrow(-1, begin, end - begin));
    m_convHistory = m_convStates.clone();
}

at::Tensor LinearAttentionLayer::updateRecurrentState(const at::Tensor& recurrentStates) {
    if (!recurrentStates.defined()) {
        throw CacheError(ErrorKind::Value, "recurrent_states must be a tensor");
    }
    if (!m_recurrentStates.defined()) {
        lazyInitialization(at::Tensor(), recurrentStates);
    }
    copyInto(m_recurrentStates, recurrentStates, "recurrent_states");
    return m_recurrentStates;
}

std::optional<int64_t> LinearAttentionLayer::convBatchSize() const {
    if (!m_convStates.defined()) {
        return std::nullopt;
    }
    return m_convStates.size(0);
}

void LinearAttentionLayer::reset() {
    if (m_convStates.defined()) {
        m_convStates.zero_();
    }
    if (m_recurrentStates.defined()) {
        m_recurrentStates.zero_();
    }
    m_convHistory = at::Tensor();
    m_hasPreviousState = false;
}

void LinearAttentionLayer::reorder(const at::Tensor& beamIdx) {
    if (m_convHistory.defined()) {
        m_convHistory = m_convHistory.index_select(
            0, checkedBeamIndex(beamIdx, m_convHistory.size(0), m_convHistory.device()));
    }
    if (m_convStates.defined()) {
        at::Tensor index = checkedBeamIndex(beamIdx, m_convStates.size(0), m_convStates.device());
        at::Tensor reordered = m_convStates.index_select(0, index);
        if (m_recurrentStates.defined()) {
            at::Tensor recurrentIndex = checkedBeamIndex(beamIdx, m_recurrentStates.size(0), m_recurrentStates.device());
            m_recurrentStates = m_recurrentStates.index_select(0, recurrentIndex);
        }
        m_convStates = reordered;
    } else if (m_recurrentStates.defined()) {
        at::Tensor index = checkedBeamIndex(beamIdx, m_recurrentStates.size(0), m_recurrentStates.device());
        m_recurrentStates = m_recurrentStates.index_select(0, index);
    }
}

void LinearAttentionLayer::batchRepeatInterleave(int64_t) {
    throw CacheError(ErrorKind::Attribute, "'" + typeName() + "' object has no attribute 'batch_repeat_interleave'");
}

void LinearAttentionLayer::batchSelectIndices(const at::Tensor&) {
    throw CacheError(ErrorKind::Attribute, "'" + typeName() + "' object has no attribute 'batch_select_indices'");
}

void LinearAttentionLayer::offload() {
    if (m_convStates.defined()) {
        m_convStates = m_convStates.to(at::kCPU, /*non_blocking=*/true);
    }
    if (m_recurrentStates.defined()) {
        m_recurrentStates = m_recurrentStates.to(at::kCPU, /*non_blocking=*/true);
    }
}

void LinearAttentionLayer::prefetch() {
    if (!m_device) {
        return;
    }
    if (m_convStates.defined() && m_convStates.device() != *m_device) {
        m_convStates = m_convStates.to(*m_device, /*non_blocking=*/true);
    }
    if (m_recurrentStates.defined() && m_recurrentStates.device() != *m_device) {
        m_recurrentStates = m_recurrentStates.to(*m_device, /*non_blocking=*/true);
    }
}

int64_t LinearAttentionLayer::storedBytes() const {
    int64_t bytes = 0;
    for (const at::Tensor* state : {&m_convStates, &m_recurrentStates}) {
        if (state->defined()) {
            bytes += static_cast<int64_t>(state->numel() * state->element_size());
        }
    }
    return bytes;
}

std::optional<at::Device> LinearAttentionLayer::currentDevice() const {
    if (m_convStates.defined()) {
        return m_convStates.device();
    }
    return m_device;
}

} // namespace kvscope::cache
