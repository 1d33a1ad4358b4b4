// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

#include <optional>

namespace kvscope::press {

/// Compactor: blends LeverageScore and NonCausalAttn, each z-normalised over the tokens between
/// `sinkStart` leading and `sinkEnd` trailing tokens, which are kept. Prefill only.
class CompactorPress : public Press {
public:
    /// `blending`: the leverage weight; unset, kvpress uses the compression ratio.
    CompactorPress(int64_t sinkStart = 8, int64_t sinkEnd = 4, int64_t chunkSize = 256,
                   int64_t sketchDimension = 48, std::optional<double> blending = std::nullopt,
                   uint64_t seed = 0);
    std::string name() const override { return "compactor"; }
    std::string referenceName() const override { return "CompactorPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The scores at compression ratio `ratio`, the blending weight when none was given.
    at::Tensor scoreAt(const PressInputs& inputs, int64_t keptCount, double ratio) const override;
    /// The leverage weight used at `ratio`.
    double blendingAt(double ratio) const { return m_blending.value_or(ratio); }

private:
    int64_t m_sinkStart;
    int64_t m_sinkEnd;
    int64_t m_chunkSize;
    int64_t m_sketchDimension;
    std::optional<double> m_blending;
    uint64_t m_seed;
};

} // namespace kvscope::press
