// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/QuantizationReport.h"
#include "kvscope/cache/Quantizer.h"
#include "kvscope/cache/SequenceBuffer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

namespace kvscope::cache {

/// One of a quantized layer's two tensors (keys or values): the quantized store, held as its exact
/// dequantization, followed by the full-precision residual, in one amortised buffer.
///
/// The reference re-quantizes the whole history at every flush, from its dequantized values. For
/// token-local grouping (every group inside one token) this engine re-quantizes only the tokens that
/// are not yet a fixed point of quantize->dequantize: a token whose round trip leaves it bit-identical
/// can never change again, so skipping it gives the reference's values exactly at O(new tokens) cost.
class QuantizedSequence {
public:
    QuantizedSequence(std::shared_ptr<const Quantizer> quantizer, int64_t axis);

    /// The first update: everything is quantized at once.
    void initialize(const at::Tensor& states);
    /// Appends to the residual and returns dequantized store + residual + new states.
    at::Tensor append(const at::Tensor& states);
    /// Moves the whole residual into the store. Tensors returned by earlier calls keep their values
    /// until the next call: the round-tripped values are written on the next access.
    void flush();
    /// Keeps the first `keep` tokens, all of them quantized (the reference's crop).
    void cropAndRequantize(int64_t keep);
    /// Applies a batch operation to the store and re-quantizes it, and to the residual when asked.
    void mapBatch(const std::function<at::Tensor(const at::Tensor&)>& op, bool residualToo);
    void zeroResidual();

    int64_t quantizedTokens() const { return m_quantizedTokens; }
    int64_t totalTokens() const { return m_mirror.length(); }
    int64_t residualTokens() const { return m_mirror.length() - m_quantizedTokens; }
    /// The residual `[batch, heads, residual, head_dim]` (after pending writes).
    at::Tensor residual();
    /// The dequantized store `[batch, heads, quantized, head_dim]` (after pending writes).
    at::Tensor dequantizedStore();
    /// Throws when `shape` cannot be quantized along this sequence's axis.
    void checkQuantizable(const std::vector<int64_t>& shape) const;
    const at::Tensor& storage() const { return m_mirror.storage(); }
    bool hasShape() const { return m_mirror.hasShape(); }
    void moveTo(const at::Device& device, bool nonBlocking);
    int64_t storeBytes() const;
    int64_t residualBytes() const;
    /// Moved tokens and reconstruction error of the last flush (sums, for combining keys and values).
    struct FlushError {
        int64_t elements = 0;
        double maxAbs = 0.0;
        double sumAbs = 0.0;
        double sumSquaredError = 0.0;
        double sumSquared = 0.0;

        /// Counts one value and what came back for it.
        void add(float given, float reconstructed) {
            const double error = std::abs(static_cast<double>(given) - static_cast<double>(reconstructed));
            ++elements;
            maxAbs = std::max(maxAbs, error);
            sumAbs += error;
            sumSquaredError += error * error;
            sumSquared += static_cast<double>(given) * static_cast<double>(given);
        }
        /// Keys' and values' errors together, as a flush of `tokensMoved` tokens reports them.
        static QuantizationReport report(const FlushError& keys, const FlushError& values, int64_t tokensMoved,
                                         int64_t quantizedTokensAfter);
    };
    const FlushError& lastFlushError() const { return m_lastFlushError; }
    bool isTokenLocal() const { return m_tokenLocal; }
    /// Tokens whose next round trip may still change them (exposed for tests and benchmarks).
    size_t unsettledTokens() const { return m_unsettled.size(); }

private:
    struct PendingWrite {
        at::Tensor positions; ///< int64 token positions
        at::Tensor values;    ///< `[batch, heads, positions, head_dim]`
    };

    at::Tensor roundTrip(const at::Tensor& states) const;
    void applyPending();
    /// Round-trips the given sorted token positions in place (or deferred) and records which changed;
    /// positions from `firstNewPosition` on are quantized for the first time.
    void settle(const std::vector<int64_t>& positions, int64_t firstNewPosition, bool deferWrite);
    /// Per token: whether the round trip changed it; accumulates the reconstruction error of the
    /// tokens from `firstNew` on (those quantized for the first time) into m_lastFlushError.
    std::vector<bool> compareTokens(const at::Tensor& before, const at::Tensor& after, int64_t firstNew);

    std::shared_ptr<const Quantizer> m_quantizer;
    int64_t m_axis;
    bool m_tokenLocal = false;
    SequenceBuffer m_mirror;
    int64_t m_quantizedTokens = 0;
    std::vector<int64_t> m_unsettled;
    std::vector<PendingWrite> m_pending;
    FlushError m_lastFlushError;
};

} // namespace kvscope::cache
