// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kvscope::trace {

/// Where each KV head's kept and dropped tokens lie in a CompressionEvent's lists (sessions/FORMAT.md, kind
/// 15), for uniform (1.2) and per-head (1.3 keptPerHead) decisions alike. Holds a reference to the event,
/// which must outlive it. An event whose lists disagree with its counts (a damaged or foreign file) reads
/// as inconsistent, and every head's lists then read empty.
class CompressionLayout {
public:
    /// More KV heads than any model has: a larger count is damage, and bounds what the layout allocates.
    static constexpr std::int32_t kMaxHeads = 4096;

    /// The writer records every k-th dropped token of a head that dropped `dropped` tokens (k >= 1).
    static std::int64_t droppedStride(std::int64_t dropped, std::int32_t heads);
    /// How many of a head's `dropped` tokens the writer records.
    static std::int64_t droppedRecorded(std::int64_t dropped, std::int32_t heads);

    explicit CompressionLayout(const CompressionEvent& event);

    bool consistent() const { return m_consistent; }
    std::int32_t heads() const { return static_cast<std::int32_t>(m_heads.size()); }
    /// Tokens head `head` kept and dropped (0 for a head out of range).
    std::int64_t keptCount(std::int32_t head) const;
    std::int64_t droppedCount(std::int32_t head) const;
    /// The kept positions of a head (empty when the event did not record them) and their scores (empty when
    /// the press ranks by no single score, or in files before 1.3).
    std::span<const std::int64_t> keptPositions(std::int32_t head) const;
    std::span<const float> keptScores(std::int32_t head) const;
    /// The recorded (every k-th) dropped positions of a head and their scores (empty without scores).
    std::span<const std::int64_t> droppedPositions(std::int32_t head) const;
    std::span<const float> droppedScores(std::int32_t head) const;
    /// The key channels a channel press (ThinK, 1.5) zeroed in head `head`, ascending; empty for token
    /// presses.
    std::span<const std::int32_t> prunedChannels(std::int32_t head) const;
    /// Channels zeroed per head (0 for token presses).
    std::int64_t prunedChannelCount() const;
    /// Whether the press re-rotated kept keys (1.7 rotaryPositions recorded).
    bool rerotated() const { return m_consistent && !m_event.rotaryPositions.empty(); }
    /// The position each of head `head`'s kept keys now encodes, aligned with keptPositions(head): kept
    /// position keptPositions(head)[i] sits at rotaryPositions(head)[i]. Empty unless rerotated().
    std::span<const std::int64_t> rotaryPositions(std::int32_t head) const;
    /// The kept tokens of all heads together.
    std::int64_t keptTotal() const { return m_keptTotal; }
    std::int64_t droppedTotal() const { return m_droppedTotal; }

private:
    struct Head {
        std::int64_t kept = 0;
        std::int64_t dropped = 0;
        std::int64_t keptOffset = 0;    ///< into keptScores, and into positions
        std::int64_t droppedOffset = 0; ///< into droppedScores; positions add keptRecorded
        std::int64_t droppedRecorded = 0;
    };
    bool layOut();
    const Head* head(std::int32_t index) const;

    const CompressionEvent& m_event;
    std::vector<Head> m_heads;
    std::int64_t m_keptTotal = 0;
    std::int64_t m_droppedTotal = 0;
    bool m_consistent = false;
};

} // namespace kvscope::trace
