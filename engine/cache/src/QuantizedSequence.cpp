// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedSequence.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace kvscope::cache {

QuantizedSequence::QuantizedSequence(std::shared_ptr<const Quantizer> quantizer, int64_t axis)
    : m_quantizer(std::move(quantizer)), m_axis(axis) {}

void QuantizedSequence::checkQuantizable(const std::vector<int64_t>& shape) const {
    m_quantizer->checkShape(shape, m_axis);
}

at::Tensor QuantizedSequence::roundTrip(const at::Tensor& states) const {
    return m_quantizer->roundTrip(states.contiguous(), m_axis);
}

void QuantizedSequence::initialize(const at::Tensor& states) {
    m_tokenLocal = m_quantizer->isTokenLocal(m_axis, states.size(3));
    m_pending.clear();
    m_mirror.clear();
    m_mirror.assign(states.clone(at::MemoryFormat::Contiguous));
    m_quantizedTokens = 0;
    m_unsettled.clear();
    flush();
    applyPending();
}

at::Tensor QuantizedSequence::append(const at::Tensor& states) {
    applyPending();
    return m_mirror.append(states);
}

std::vector<bool> QuantizedSequence::compareTokens(const at::Tensor& before, const at::Tensor& after, int64_t firstNew) {
    const int64_t tokens = before.size(2);
    std::vector<bool> changed(static_cast<size_t>(tokens), false);
    if (before.is_cpu() && before.scalar_type() == at::kFloat && after.scalar_type() == at::kFloat &&
        before.is_contiguous() && after.is_contiguous()) {
        // One pass over plain floats: a tensor-op version costs more than the round trip itself.
        const float* original = before.data_ptr<float>();
        const float* reconstructed = after.data_ptr<float>();
        const int64_t rows = before.size(0) * before.size(1);
        const int64_t width = before.size(3);
        for (int64_t row = 0; row < rows; ++row) {
            for (int64_t token = 0; token < tokens; ++token) {
                const int64_t offset = (row * tokens + token) * width;
                const bool isNew = token >= firstNew;
                bool differs = false;
                for (int64_t i = 0; i < width; ++i) {
                    const float a = original[offset + i];
                    const float b = reconstructed[offset + i];
                    differs = differs || !(a == b);
                    if (isNew) {
                        m_lastFlushError.add(a, b);
                    }
                }
                if (differs) {
                    changed[static_cast<size_t>(token)] = true;
                }
            }
        }
        return changed;
    }
    at::Tensor differs = (after != before).flatten(0, 1).any(0).any(-1).to(at::kCPU);
    const bool* differsData = differs.data_ptr<bool>();
    for (int64_t token = 0; token < tokens; ++token) {
        changed[static_cast<size_t>(token)] = differsData[token];
    }
    const at::Tensor original = before.narrow(2, firstNew, tokens - firstNew).to(at::kDouble);
    const at::Tensor difference = original - after.narrow(2, firstNew, tokens - firstNew).to(at::kDouble);
    m_lastFlushError.elements += original.numel();
    if (original.numel() > 0) {
        m_lastFlushError.maxAbs = std::max(m_lastFlushError.maxAbs, difference.abs().max().item<double>());
    }
    m_lastFlushError.sumAbs += difference.abs().sum().item<double>();
    m_lastFlushError.sumSquaredError += difference.pow(2).sum().item<double>();
    m_lastFlushError.sumSquared += original.pow(2).sum().item<double>();
    return changed;
}

QuantizationReport QuantizedSequence::FlushError::report(const FlushError& keys, const FlushError& values,
                                                         int64_t tokensMoved, int64_t quantizedTokensAfter) {
    QuantizationReport report;
    report.tokensMoved = tokensMoved;
    report.quantizedTokensAfter = quantizedTokensAfter;
    report.maxAbsError = std::max(keys.maxAbs, values.maxAbs);
    const auto elements = static_cast<double>(keys.elements + values.elements);
    report.meanAbsError = elements > 0 ? (keys.sumAbs + values.sumAbs) / elements : 0.0;
    const double norm = keys.sumSquared + values.sumSquared;
    report.relativeError = norm > 0 ? std::sqrt((keys.sumSquaredError + values.sumSquaredError) / norm) : 0.0;
    return report;
}

void QuantizedSequence::flush() {
    const int64_t total = m_mirror.length();
    const int64_t firstNew = m_quantizedTokens;
    m_lastFlushError = {};
    if (!m_tokenLocal) {
        // The grouping spans tokens: quantize the whole history as the reference does.
        at::Tensor all = m_mirror.view();
        at::Tensor requantized = roundTrip(all);
        compareTokens(all.contiguous(), requantized, firstNew);
        m_mirror.assign(requantized.contiguous());
        m_quantizedTokens = total;
        return;
    }
    std::vector<int64_t> positions = std::move(m_unsettled);
    m_unsettled.clear();
    for (int64_t position = firstNew; position < total; ++position) {
        positions.push_back(position);
    }
    m_quantizedTokens = total;
    settle(positions, firstNew, /*deferWrite=*/true);
}

void QuantizedSequence::settle(const std::vector<int64_t>& positions, int64_t firstNewPosition, bool deferWrite) {
    if (positions.empty()) {
        return;
    }
    at::Tensor index = at::tensor(positions, at::TensorOptions().dtype(at::kLong)).to(m_mirror.storage().device());
    at::Tensor view = m_mirror.view();
    at::Tensor before = view.index_select(2, index);
    at::Tensor after = roundTrip(before);
    // Only tokens quantized for the first time count for the reconstruction error; the others are
    // re-quantizations of values that were already dequantized.
    const auto firstNew = static_cast<int64_t>(std::lower_bound(positions.begin(), positions.end(), firstNewPosition) -
                                               positions.begin());
    const std::vector<bool> changed = compareTokens(before, after, firstNew);
    for (size_t i = 0; i < positions.size(); ++i) {
        if (changed[i]) {
            m_unsettled.push_back(positions[i]);
        }
    }
    if (deferWrite) {
        m_pending.push_back({index, after});
    } else {
        view.index_copy_(2, index, after);
    }
}

void QuantizedSequence::applyPending() {
    if (m_pending.empty()) {
        return;
    }
    at::Tensor view = m_mirror.view();
    for (const PendingWrite& write : m_pending) {
        view.index_copy_(2, write.positions, write.values);
    }
    m_pending.clear();
}

void QuantizedSequence::cropAndRequantize(int64_t keep) {
    applyPending();
    m_mirror.truncate(keep);
    // Re-quantizing writes in place: move to private storage so earlier returned tensors keep theirs.
    m_mirror.assign(m_mirror.view().clone(at::MemoryFormat::Contiguous));
    m_quantizedTokens = m_mirror.length();
    m_lastFlushError = {};
    if (!m_tokenLocal) {
        m_mirror.assign(roundTrip(m_mirror.view()).contiguous());
        return;
    }
    std::vector<int64_t> positions(static_cast<size_t>(m_quantizedTokens));
    for (int64_t position = 0; position < m_quantizedTokens; ++position) {
        positions[static_cast<size_t>(position)] = position;
    }
    m_unsettled.clear();
    settle(positions, m_quantizedTokens, /*deferWrite=*/false);
}

void QuantizedSequence::mapBatch(const std::function<at::Tensor(const at::Tensor&)>& op, bool residualToo) {
    applyPending();
    at::Tensor store = op(dequantizedStore());
    at::Tensor requantized = roundTrip(store);
    at::Tensor rest = residual();
    if (residualToo && rest.size(2) > 0) {
        rest = op(rest);
    }
    if (rest.size(2) > 0 && rest.size(0) != requantized.size(0)) {
        throw CacheError(ErrorKind::Runtime, "the quantized store would hold batch " + std::to_string(requantized.size(0)) +
                                                 " but the residual batch " + std::to_string(rest.size(0)) +
                                                 " (the residual is left alone after a reset, as in the reference)");
    }
    m_mirror.assign(rest.size(2) > 0 ? at::cat({requantized, rest}, 2) : requantized.contiguous());
    // Re-quantizing after a batch operation is a round trip of every stored token: all may move.
    m_unsettled.clear();
    if (m_tokenLocal) {
        for (int64_t position = 0; position < m_quantizedTokens; ++position) {
            m_unsettled.push_back(position);
        }
    }
}

void QuantizedSequence::zeroResidual() {
    applyPending();
    if (m_mirror.hasShape()) {
        residual().zero_();
    }
}

at::Tensor QuantizedSequence::residual() {
    applyPending();
    return m_mirror.view().narrow(2, m_quantizedTokens, m_mirror.length() - m_quantizedTokens);
}

at::Tensor QuantizedSequence::dequantizedStore() {
    applyPending();
    return m_mirror.view().narrow(2, 0, m_quantizedTokens);
}

void QuantizedSequence::moveTo(const at::Device& device, bool nonBlocking) {
    applyPending();
    m_mirror.moveTo(device, nonBlocking);
}

int64_t QuantizedSequence::storeBytes() const {
    if (!m_mirror.hasShape()) {
        return 0;
    }
    const int64_t perToken = m_mirror.storage().numel() / std::max<int64_t>(m_mirror.storage().size(2), 1);
    return m_quantizer->storageBytes(m_quantizedTokens * perToken);
}

int64_t QuantizedSequence::residualBytes() const {
    if (!m_mirror.hasShape()) {
        return 0;
    }
    const int64_t perToken = m_mirror.storage().numel() / std::max<int64_t>(m_mirror.storage().size(2), 1);
    return residualTokens() * perToken * static_cast<int64_t>(m_mirror.storage().element_size());
}

} // namespace kvscope::cache
