// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvscope::trace {

/// The cache layer classes of the reference, as recorded in events and session files.
/// The numeric values are written to session files: append new kinds, never renumber.
enum class LayerKind : std::uint8_t {
    Dynamic = 0,
    DynamicSlidingWindow = 1,
    Static = 2,
    StaticSlidingWindow = 3,
    Quantized = 4,
    LinearAttention = 5,
    LinearAttentionAndFullAttention = 6,
    Last = LinearAttentionAndFullAttention, ///< the highest value a session file may hold
};

/// Stable snake_case name ("dynamic_sliding_window"), used in JSON output and session files.
std::string_view toString(LayerKind kind);

/// Accepts the snake_case name and the C++ enumerator name ("DynamicSlidingWindow");
/// nullopt for anything else so that callers can report where the bad name came from.
std::optional<LayerKind> layerKindFromString(std::string_view name);

/// Sliding layers keep only the last window of tokens, so their window fields are meaningful.
constexpr bool isSlidingWindow(LayerKind kind) {
    return kind == LayerKind::DynamicSlidingWindow || kind == LayerKind::StaticSlidingWindow;
}

} // namespace kvscope::trace
