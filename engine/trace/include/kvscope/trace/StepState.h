// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerState.h"
#include "kvscope/trace/PagedState.h"
#include "kvscope/trace/ServerCacheState.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::trace {

/// The whole cache after the events of one step: per-layer state plus cache-wide totals.
/// Views receive it as an immutable snapshot (std::shared_ptr<const StepState>).
struct StepState {
    std::int64_t step = 0;
    std::vector<LayerState> layers; ///< grows to the highest layer index seen so far

    /// Cache-wide bytes per tier, from the last Memory event with layer -1.
    std::int64_t memoryDeviceFullPrecision = 0;
    std::int64_t memoryDeviceQuantized = 0;
    std::int64_t memoryHost = 0;

    /// Cleared at the start of every step, so a step without StepBegin/StepEnd shows no token.
    std::int64_t inputTokenId = -1; ///< from StepBegin: what the model was fed
    std::string inputText;
    std::int64_t tokenId = -1; ///< from StepEnd: what the step produced
    std::string tokenText;
    std::int64_t wallNs = 0; ///< from StepEnd: duration of the step

    /// Serving sessions: the block pool after the step (format 1.4). Rebuilt from events; session file
    /// snapshots do not carry it (they keep the 1.3 layout so that older readers still open the file).
    PagedState paged;
    /// Attached sessions: the server's prefix cache after the step (format 1.10), rebuilt from events as
    /// `paged` is.
    ServerCacheState server;

    std::int64_t memoryDeviceTotal() const { return memoryDeviceFullPrecision + memoryDeviceQuantized; }

    bool operator==(const StepState&) const = default;
};

} // namespace kvscope::trace
