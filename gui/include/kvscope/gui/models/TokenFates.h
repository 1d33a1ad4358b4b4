// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/MaskGeometry.h"
#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/models/PressHistory.h"
#include "kvscope/trace/StepState.h"
#include "kvscope/trace/Timeline.h"

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kvscope::gui {

/// What a layer's cache holds of one token at a step, as the transcript colours it.
enum class TokenFate : std::uint8_t {
    Kept,          ///< held at full precision and attended
    Quantized,     ///< held in a quantized store
    Offloaded,     ///< held in host memory
    Masked,        ///< held, but the mask (a chunk, a window) or a masking press hides it from the newest query
    SlidOut,       ///< evicted by a sliding window (or cropped storage)
    PartlyDropped, ///< evicted by a cache press from some KV heads
    Dropped,       ///< evicted by a cache press from every KV head
    Absent,        ///< not in the layer's cache: not seen yet
};
inline constexpr int kTokenFateCount = 8;

/// How many layers hold a token in each way, and the fate a summary over the layers shows.
struct TokenFateCounts {
    std::array<std::int32_t, kTokenFateCount> layers{};
    std::int32_t of(TokenFate fate) const { return layers[static_cast<std::size_t>(fate)]; }
    /// Layers that have seen the token (every fate but Absent).
    std::int32_t seen() const;
    /// The most severe fate any layer gave the token (Dropped, PartlyDropped, SlidOut, Masked, Offloaded,
    /// Quantized, Kept, in that order); Absent when no layer has seen it.
    TokenFate shown() const;
    bool operator==(const TokenFateCounts&) const = default;
};

/// One layer's holdings at one step: the occupancy map's runs with the press's dropped runs laid over, and
/// the newest query's mask.
struct LayerHoldings {
    std::vector<SlotSegment> segments;
    /// The latest press decision only hides tokens (AdaKV: the cache keeps its length): dropped means masked.
    bool maskingPress = false;
    /// Empty (no query) where a press compacted the slots.
    MaskShape mask;
    TokenFate fateAt(std::int64_t position) const;
};

/// What the cache holds of every token at a step, per layer or summed over the layers (the transcript's
/// colours), from a StepState and the session's press decisions alone: the occupancy map's runs
/// (OccupancyGeometry, PressGeometry) and the mask view's mask (MaskGeometry). Torch-free, Qt-free.
class TokenFates {
public:
    /// Forgets the session (a new one).
    void reset();
    /// Reads the press decisions the timeline gained since the last call.
    void update(const trace::Timeline& timeline);
    /// The holdings of every layer at `state`'s step; `chunkSizes` are the session's attention chunks per layer.
    void setState(const trace::StepState& state, const std::vector<std::int64_t>& chunkSizes);
    std::int64_t step() const { return m_step; }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    /// Absent for a layer out of range.
    TokenFate fateAt(int layer, std::int64_t position) const;
    TokenFateCounts countsAt(std::int64_t position) const;
    /// The KV heads of `layer` whose latest press decision at the step dropped (or hid) `position`, and how many
    /// heads it has: {0, 0} where no press decided.
    std::pair<int, int> headsDropping(int layer, std::int64_t position) const;
    /// The first step of the run of steps ending at `step` over which `layer` (-1: any layer) gave `position`
    /// the fate `fate` (binary search over `timeline`'s states: the run is taken to be unbroken, as evictions
    /// are); nullopt when it does not at `step`. Reads the press decisions given to update().
    std::optional<std::int64_t> since(const trace::Timeline& timeline, std::int64_t step, int layer,
                                      std::int64_t position, TokenFate fate) const;

private:
    LayerHoldings holdingsOf(const trace::StepState& state, std::size_t layer) const;

    PressHistory m_press;
    /// Dropped runs per compression, derived once (the press history's entries move as it grows: cleared then).
    mutable std::unordered_map<const PressHistory::Compression*, std::vector<SlotSegment>> m_dropped;
    std::vector<std::int64_t> m_chunkSizes;
    std::vector<LayerHoldings> m_layers;
    std::int64_t m_step = 0;
};

} // namespace kvscope::gui
