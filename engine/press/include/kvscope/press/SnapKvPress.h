// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// SnapKV: the attention of the last `windowSize` queries, pooled along the sequence; the window is kept.
class SnapKvPress : public Press {
public:
    SnapKvPress(int64_t windowSize = 64, int64_t kernelSize = 5);
    std::string name() const override { return "snapkv"; }
    std::string referenceName() const override { return "SnapKVPress"; }
    PressReads reads() const override { return {false, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// Softmax attention [B, H, window, T - window] of the last `window` hidden rows' queries (rotated with the
    /// last rotary rows, or one broadcast row) over the keys, causal inside the window, window columns dropped.
    static at::Tensor windowAttention(const PressInputs& inputs, int64_t window);
    int64_t windowSize() const { return m_windowSize; }

private:
    int64_t m_windowSize;
    int64_t m_kernelSize;
};

} // namespace kvscope::press
