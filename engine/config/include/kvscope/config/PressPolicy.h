// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace kvscope::config {

/// What a press reads of an attention layer and what it does to the cache on a pass, without LibTorch: the
/// engine computes only what a press reads, and the views say honestly what a decision saved.
struct PressPolicy {
    /// What the press reads besides the cached keys.
    bool values = false;
    /// Hidden states, q_proj and the rotary rows (the press computes queries).
    bool queries = false;
    /// The eager attention weights of a pass.
    bool attentions = false;
    /// o_proj's weight (CriticalKV's value norms).
    bool outputProjection = false;
    /// k_proj's weight (pre-RoPE keys).
    bool keyProjection = false;
    /// When it acts: `prefill` (after the prefill's attention), `decoding` (while decoding) or `both`.
    std::string when = "prefill";
    /// What a decision does: `evicts` (drops tokens: memory saved), `masks` (hides slots from attention:
    /// nothing saved), `rewrites keys` (changes kept keys), or `evicts, rewrites keys`.
    std::string effect = "evicts";

    /// Whether a decision frees cache memory (an eviction does; a mask does not).
    bool savesMemory() const { return effect.find("evicts") != std::string::npos; }
    bool rewritesKeys() const { return effect.find("rewrites keys") != std::string::npos; }
};

} // namespace kvscope::config
