// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedLayer.h"

#include "BatchIndex.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <cmath>

namespace kvscope::cache {

QuantizedLayer::QuantizedLayer(std::shared_ptr<const Quantizer> quantizer, int64_t axisKey, int64_t axisValue,
                               int64_t residualLength)
    : m_quantizer(std::move(quantizer)), m_axisKey(axisKey), m_axisValue(axisValue), m_residualLength(residualLength),
      m_keys(m_quantizer, axisKey), m_values(m_quantizer, axisValue) {
    m_quantizer->checkAxis(axisKey, "axis_key");
    m_quantizer->checkAxis(axisValue, "axis_value");
    if (residualLength < 1) {
        throw CacheError(ErrorKind::Value, "residual_length must be >= 1, got " + std::to_string(residualLength));
    }
}

std::string QuantizedLayer::typeName() const {
    return m_quantizer->backend() == config::QuantizerBackend::Hqq ? "HQQQuantizedLayer" : "MinMaxQuantizedLayer";
}

void QuantizedLayer::lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    m_device = keyStates.device();
    m_initialized = true;
}

void QuantizedLayer::checkNewStates(const at::Tensor& keyStates, const at::Tensor& valueStates) const {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    if (keyStates.size(2) != valueStates.size(2)) {
        throw CacheError(ErrorKind::Value, "key_states and value_states must hold the same number of tokens, got " +
                                               std::to_string(keyStates.size(2)) + " and " +
                                               std::to_string(valueStates.size(2)));
    }
    if (m_keys.hasShape()) {
        checkSameSequenceShape(m_keys.storage(), keyStates, "keys");
        checkSameSequenceShape(m_values.storage(), valueStates, "values");
    }
}

KeyValueStates QuantizedLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkNewStates(keyStates, valueStates);
    const int64_t tokens = keyStates.size(2);
    m_lastFlush.reset();
    if (!m_keys.hasShape()) {
        // The whole prefill is quantized at once and returned unquantized, as in the reference.
        m_keys.checkQuantizable(keyStates.sizes().vec());
        m_values.checkQuantizable(valueStates.sizes().vec());
        if (!m_initialized) {
            lazyInitialization(keyStates, valueStates);
        }
        m_cumulativeLength += tokens;
        m_keys.initialize(keyStates);
        m_values.initialize(valueStates);
        m_residualShaped = false;
        reportFlush();
        return {keyStates, valueStates};
    }
    const bool flush = m_residualShaped && m_keys.residualTokens() + 1 >= m_residualLength;
    if (flush) {
        auto keyShape = keyStates.sizes().vec();
        keyShape[2] = m_keys.totalTokens() + tokens;
        auto valueShape = valueStates.sizes().vec();
        valueShape[2] = m_values.totalTokens() + tokens;
        m_keys.checkQuantizable(keyShape);
        m_values.checkQuantizable(valueShape);
    }
    m_cumulativeLength += tokens;
    KeyValueStates returned{m_keys.append(keyStates), m_values.append(valueStates)};
    if (flush) {
        m_keys.flush();
        m_values.flush();
        m_residualShaped = false;
        reportFlush();
    } else {
        m_residualShaped = true;
    }
    return returned;
}

void QuantizedLayer::reportFlush() {
    const auto& keyError = m_keys.lastFlushError();
    const int64_t perToken = m_keys.storage().numel() / std::max<int64_t>(m_keys.storage().size(2), 1);
    m_lastFlush = QuantizedSequence::FlushError::report(keyError, m_values.lastFlushError(),
                                                        perToken > 0 ? keyError.elements / perToken : 0,
                                                        m_keys.quantizedTokens());
}

at::Tensor QuantizedLayer::keys() const {
    if (!m_initialized) {
        return {};
    }
    if (!m_residualShaped) {
        return at::empty({0}, m_keys.storage().options());
    }
    return const_cast<QuantizedSequence&>(m_keys).residual();
}

at::Tensor QuantizedLayer::values() const {
    if (!m_initialized) {
        return {};
    }
    if (!m_residualShaped) {
        return at::empty({0}, m_values.storage().options());
    }
    return const_cast<QuantizedSequence&>(m_values).residual();
}

void QuantizedLayer::keepTokens(const at::Tensor& indices) {
    if (!m_keys.hasShape()) {
        throw CacheError(ErrorKind::Runtime, typeName() + " holds no states yet: there is nothing to keep");
    }
    // As kvpress on a QuantizedCache: dequantize store and residual, keep the tokens, quantize them all
    // again with an empty residual.
    KeyValueStates states = dequantizedStore();
    if (m_residualShaped) {
        states.keys = at::cat({states.keys, keys()}, 2);
        states.values = at::cat({states.values, values()}, 2);
    }
    const at::Tensor rows = indices.to(states.keys.device()).unsqueeze(-1);
    m_keys.initialize(states.keys.gather(2, rows.expand({-1, -1, -1, states.keys.size(3)})));
    m_values.initialize(states.values.gather(2, rows.expand({-1, -1, -1, states.values.size(3)})));
    m_cumulativeLength = indices.size(2);
    m_residualShaped = false;
}

void QuantizedLayer::rewriteKeys(const at::Tensor& keys) {
    if (!m_keys.hasShape()) {
        throw CacheError(ErrorKind::Runtime,
                         typeName() + " holds no states yet: there are no keys to rewrite");
    }
    // As keepTokens: everything quantized again (kvpress re-quantizes the whole layer after a press).
    KeyValueStates states = dequantizedStore();
    if (m_residualShaped) {
        states.values = at::cat({states.values, values()}, 2);
    }
    if (keys.size(2) != states.values.size(2)) {
        throw CacheError(ErrorKind::Runtime, typeName() + ": rewritten keys must keep the stored tokens");
    }
    m_keys.initialize(keys.to(states.values.device(), states.values.scalar_type()));
    m_values.initialize(states.values);
    m_cumulativeLength = keys.size(2);
    m_residualShaped = false;
}

KeyValueStates QuantizedLayer::dequantizedStore() {
    if (!m_keys.hasShape()) {
        return {};
    }
    return {m_keys.dequantizedStore(), m_values.dequantizedStore()};
}

void QuantizedLayer::reset() {
    // As in the reference: the residual is zeroed in place and the counter restarts; the quantized
    // store is kept and still returned by the next update.
    if (m_initialized) {
        m_keys.zeroResidual();
        m_values.zeroResidual();
    }
    m_cumulativeLength = 0;
}

void QuantizedLayer::crop(int64_t maxLength) {
    if (maxLength < 0) {
        maxLength = seqLength() - (-maxLength);
    }
    if (seqLength() <= maxLength) {
        return;
    }
    if (!m_keys.hasShape()) {
        throw CacheError(ErrorKind::Type, typeName() + " holds no states yet (no update so far): nothing to crop");
    }
    const int64_t total = m_keys.totalTokens();
    const int64_t keep = maxLength >= 0 ? std::min(maxLength, total) : std::max<int64_t>(total + maxLength, 0);
    auto keyShape = m_keys.storage().sizes().vec();
    keyShape[2] = keep;
    auto valueShape = m_values.storage().sizes().vec();
    valueShape[2] = keep;
    m_keys.checkQuantizable(keyShape);
    m_values.checkQuantizable(valueShape);
    m_keys.cropAndRequantize(keep);
    m_values.cropAndRequantize(keep);
    m_residualShaped = false;
    // The reference sets the counter to the requested length, even a still-negative one.
    m_cumulativeLength = maxLength;
}

void QuantizedLayer::reorder(const at::Tensor& beamIdx) {
    if (!m_keys.hasShape()) {
        return;
    }
    const int64_t batch = m_keys.storage().size(0);
    at::Tensor index = checkedBeamIndex(beamIdx, batch, m_keys.storage().device());
    const bool residualToo = seqLength() > 0;
    if (residualToo && !m_residualShaped && index.numel() > 0) {
        throw CacheError(ErrorKind::Index, "index out of range in self: the residual is the empty 1-D tensor left by "
                                           "the last flush, which the reference cannot reorder");
    }
    auto select = [&index](const at::Tensor& states) { return states.index_select(0, index); };
    m_keys.mapBatch(select, residualToo);
    m_values.mapBatch(select, residualToo);
}

void QuantizedLayer::batchRepeatInterleave(int64_t repeats) {
    if (!m_keys.hasShape()) {
        return;
    }
    if (repeats < 0) {
        throw CacheError(ErrorKind::Runtime, "repeats must be >= 0, got " + std::to_string(repeats));
    }
    auto repeat = [repeats](const at::Tensor& states) { return states.repeat_interleave(repeats, 0); };
    m_keys.mapBatch(repeat, seqLength() > 0);
    m_values.mapBatch(repeat, seqLength() > 0);
}

void QuantizedLayer::batchSelectIndices(const at::Tensor& indices) {
    if (!m_keys.hasShape()) {
        return;
    }
    const int64_t batch = m_keys.storage().size(0);
    at::Tensor index = checkedSelectIndex(indices, batch, m_keys.storage().device());
    const bool residualToo = seqLength() > 0;
    if (residualToo && !m_residualShaped && index.numel() > 0) {
        throw CacheError(ErrorKind::Index, "index is out of bounds for dimension with size 0: the residual is the "
                                           "empty 1-D tensor left by the last flush");
    }
    auto select = [&index](const at::Tensor& states) { return states.index_select(0, index); };
    m_keys.mapBatch(select, residualToo);
    m_values.mapBatch(select, residualToo);
}

void QuantizedLayer::offload() {
    if (m_initialized) {
        m_keys.moveTo(at::kCPU, /*nonBlocking=*/true);
        m_values.moveTo(at::kCPU, /*nonBlocking=*/true);
    }
}

void QuantizedLayer::prefetch() {
    if (m_initialized && m_device) {
        m_keys.moveTo(*m_device, /*nonBlocking=*/true);
        m_values.moveTo(*m_device, /*nonBlocking=*/true);
    }
}

int64_t QuantizedLayer::storedBytes() const { return quantizedBytes() + residualBytes(); }

std::optional<at::Device> QuantizedLayer::currentDevice() const {
    if (m_keys.hasShape()) {
        return m_keys.storage().device();
    }
    return m_device;
}

} // namespace kvscope::cache
