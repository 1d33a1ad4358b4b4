// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// What one KV head holds at one position, as the heads view colours it.
enum class HeadSlot : std::uint8_t {
    Kept,    ///< held and attended: the press kept it
    Dropped, ///< evicted by a press
    Masked,  ///< still in the cache, but a masking press (AdaKV) hides it from this head's later queries
    Later,   ///< arrived after the press decided: held and attended
    Vacant,  ///< a rotated row only: no kept key's rotation encodes this position any more (KeyRerotation)
};
/// The slots of a head's token row (the legend); Vacant appears only in rotated rows.
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
    /// Per head, the position each kept key's rotary embedding now encodes (format 1.7, KeyRerotation),
    /// aligned with `kept`: the key of kept[h][i] sits at rotary[h][i]. Empty when keys keep their rotation.
    std::vector<std::vector<std::int64_t>> rotary;
    bool rerotated() const { return !rotary.empty(); }
    bool operator==(const HeadDecision&) const = default;
};

/// One kept key of a re-rotated head: the position it was computed at and the one its rotation encodes.
struct RotaryLink {
    std::int64_t from = 0;
    std::int64_t to = 0;
    bool operator==(const RotaryLink&) const = default;
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
    /// A re-rotated head's row by the position each key's rotation encodes, over [0, positions): Kept where
    /// a kept key now sits, Vacant at the other covered positions (no key encodes them any more), Later past
    /// them (new tokens keep their own positions). Empty for a decision that did not re-rotate.
    static std::vector<HeadRun> rotatedRunsOf(const HeadDecision& decision, std::size_t head,
                                              std::int64_t positions);
    /// A re-rotated head's position map, by old position, for the view's strip: every kept key's move, or
    /// every k-th (the first and last always) when there are more than `limit` (>= 3).
    static std::vector<RotaryLink> linksOf(const HeadDecision& decision, std::size_t head, std::size_t limit);
    /// The old position of the key whose rotation now encodes `position` in head `head`; nullopt for none.
    static std::optional<std::int64_t> rotatedFrom(const HeadDecision& decision, std::size_t head,
                                                   std::int64_t position);
    /// The position the key of kept position `position` was re-rotated to; nullopt when not re-rotated.
    static std::optional<std::int64_t> rotatedTo(const HeadDecision& decision, std::size_t head,
                                                 std::int64_t position);
};

} // namespace kvscope::gui
