// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/QuantizationReport.h"
#include "kvscope/cache/QuantizedSequence.h"

#include <memory>
#include <optional>

namespace kvscope::cache {

/// A KIVI-style quantized layer (the reference's `QuantizedLayer`): the first update is quantized
/// whole; later tokens go to a full-precision residual, and when the residual holds
/// `residualLength - 1` tokens the next update quantizes the whole history again.
class QuantizedLayer : public AttentionLayer {
public:
    /// Refuses axes the quantizer does not support and a residual length below 1.
    QuantizedLayer(std::shared_ptr<const Quantizer> quantizer, int64_t axisKey, int64_t axisValue,
                   int64_t residualLength);

    std::string typeName() const override;
    bool isCompileable() const override { return false; }

    void lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    MaskSizes maskSizes(int64_t queryLength) const override { return {m_cumulativeLength + queryLength, 0}; }
    int64_t seqLength() const override { return m_cumulativeLength; }
    int64_t maxCacheShape() const override { return -1; }
    bool isInitialized() const override { return m_initialized; }
    /// The full-precision residual (the reference's `self.keys`): empty and one-dimensional right
    /// after a flush.
    at::Tensor keys() const override;
    at::Tensor values() const override;
    int64_t storedTokens() const override { return m_keys.totalTokens(); }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    void crop(int64_t maxLength) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void keepTokens(const at::Tensor& indices) override;
    void rewriteKeys(const at::Tensor& keys) override;
    void offload() override;
    void prefetch() override;
    /// Quantized store (packed codes, scales, offsets) plus the full-precision residual.
    int64_t storedBytes() const override;
    std::optional<at::Device> homeDevice() const override { return m_device; }
    std::optional<at::Device> currentDevice() const override;

    const Quantizer& quantizer() const { return *m_quantizer; }
    int64_t residualLength() const { return m_residualLength; }
    int64_t axisKey() const { return m_axisKey; }
    int64_t axisValue() const { return m_axisValue; }
    int64_t quantizedTokens() const { return m_keys.quantizedTokens(); }
    int64_t residualTokens() const { return m_keys.residualTokens(); }
    int64_t quantizedBytes() const { return m_keys.storeBytes() + m_values.storeBytes(); }
    int64_t residualBytes() const { return m_keys.residualBytes() + m_values.residualBytes(); }
    /// The dequantized store of keys and values, as the reference's `_dequantize` returns it.
    KeyValueStates dequantizedStore();
    /// The flush the last update made, if it made one.
    const std::optional<QuantizationReport>& lastFlush() const { return m_lastFlush; }
    const QuantizedSequence& keySequence() const { return m_keys; }
    const QuantizedSequence& valueSequence() const { return m_values; }

private:
    void checkNewStates(const at::Tensor& keyStates, const at::Tensor& valueStates) const;
    void reportFlush();

    std::shared_ptr<const Quantizer> m_quantizer;
    int64_t m_axisKey;
    int64_t m_axisValue;
    int64_t m_residualLength;
    int64_t m_cumulativeLength = 0;
    bool m_initialized = false;
    /// The reference's residual is a 4-D tensor once a token was appended after the last flush, and
    /// an empty 1-D tensor before; the flush rule and the batch operations depend on it.
    bool m_residualShaped = false;
    std::optional<at::Device> m_device;
    QuantizedSequence m_keys;
    QuantizedSequence m_values;
    std::optional<QuantizationReport> m_lastFlush;
};

} // namespace kvscope::cache
