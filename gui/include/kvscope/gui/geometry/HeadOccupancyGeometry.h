// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// What one KV head holds at one position, as the heads view colours it.
enum class HeadSlot : std::uint8_t {
    Kept,    ///< held and attended: the press kept it
    Dropped, ///< evicted by a press
    Masked,  ///< still in the cache, but a masking press (AdaKV) hides it from this head's later queries
    Later,   ///< arrived after the press decided: held and attended
};
inline constexpr int kHeadSlotCount = 4;

/// A press's decision on one layer, per KV head, as a compression event records it (batch row 0).
struct HeadDecision {
    std::int64_t step = -1;
    /// The positions the decision covered, [0, coveredPositions); later positions arrived after it.
    std::int64_t coveredPositions = 0;
    /// A masking press (the cache kept its length, lengthAfter == lengthBefore): dropped means masked.
    bool masking = false;
    /// Whether the event recorded every head's kept positions (large decisions record dropped ones only).
    bool keptRecorded = false;
    /// Per head, the positions it holds and attends among the covered ones (its budget).
    std::vector<std::int64_t> keptCounts;
    /// Per head, ascending.
    std::vector<std::vector<std::int64_t>> kept;
    /// Per head, ascending; every k-th only when the event downsampled them.
    std::vector<std::vector<std::int64_t>> dropped;
    /// Per head, the key channels a channel press (ThinK) zeroed, ascending; empty for token presses. Such a
    /// decision keeps every position (masking is false: nothing is hidden, keys lose channels).
    std::vector<std::vector<std::int32_t>> prunedChannels;
    bool operator==(const HeadDecision&) const = default;
};

/// A run [begin, end) of one head's positions in one state.
struct HeadRun {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    HeadSlot slot = HeadSlot::Kept;
    bool operator==(const HeadRun&) const = default;
};

/// Pure geometry of the heads view (one row per KV head of a layer, one column per position): which
/// positions each head kept, lost or masked at a press's decision. A per-head press (AdaKV) gives rows of
/// different lengths, a uniform one identical counts.
class HeadOccupancyGeometry {
public:
    /// The per-head lists of `event` at `step` (trace::CompressionLayout: uniform and per-head kept counts;
    /// an inconsistent event has no heads). `coveredPositions` is the number of positions the layer had
    /// seen (the prompt's length plus the step); 0 takes the largest recorded position + 1.
    static HeadDecision decisionOf(const trace::CompressionEvent& event, std::int64_t step,
                                   std::int64_t coveredPositions);
    /// One head's row over [0, positions) in position order, neighbouring positions of one state merged.
    /// Inside the covered positions: Kept where the head kept it; else Dropped (Masked for a masking
    /// press). When kept positions were not recorded, the recorded dropped ones are Dropped/Masked and
    /// the rest Kept. Past them: Later.
    static std::vector<HeadRun> runsOf(const HeadDecision& decision, std::size_t head,
                                       std::int64_t positions);
};

} // namespace kvscope::gui
