// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/PressHistory.h"
#include "kvscope/trace/StepState.h"

#include <QString>
#include <cstdint>
#include <span>

namespace kvscope::gui {

/// What a session's cache press saved of the cache's memory by a step, from its compression events priced at
/// each layer's bytes per cached token: an eviction saves its tokens' bytes; a mask (AdaKV) or rewritten keys
/// (ThinK's zeroed channels, KeyRerotation's new angles) save nothing. The memory view says it over its
/// chart.
class PressSavings {
public:
    struct Figures {
        std::int64_t decisions = 0;    ///< compressions at or before the step
        std::int64_t evictedSlots = 0; ///< token slots per KV head evicted, summed over the layers
        std::int32_t layers = 0;       ///< layers that evicted
        double bytes = 0.0;            ///< what the evictions freed
        bool masked = false;           ///< a decision masked slots instead of evicting them
        bool zeroedChannels = false;   ///< a decision zeroed key channels
        bool rerotated = false;        ///< a decision re-rotated kept keys
        bool operator==(const Figures&) const = default;
    };

    /// The compressions at or before `step`, each eviction priced at its layer's bytes per cached token in
    /// `state` (the state at `step`): its device and host bytes over the tokens it holds.
    static Figures of(std::span<const PressHistory::Compression> compressions, const trace::StepState& state,
                      std::int64_t step);
    /// The memory view's note for the press `press` (its display name): what it saved and why; empty before
    /// any decision.
    static QString note(const QString& press, const Figures& figures);
};

} // namespace kvscope::gui
