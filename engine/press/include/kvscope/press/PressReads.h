// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace kvscope::press {

/// What a press reads besides the cache keys, so that the model computes queries or attention weights
/// only for a press that asks for them.
struct PressReads {
    bool values = false;
    /// hidden states, q_proj and the rotary rows.
    bool queries = false;
    /// eager attention weights.
    bool attentions = false;
};

} // namespace kvscope::press
