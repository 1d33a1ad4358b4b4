// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerState.h"

#include <cstdint>
#include <utility>

namespace kvscope::gui {

/// How a layer's attention mask restricts keys, beyond causality.
enum class MaskKind : std::uint8_t {
    Full, ///< causal: a query sees every earlier position
    Sliding, ///< causal and within the last `span` positions
    Chunked, ///< causal and within the query's chunk of `span` positions (Llama 4)
};

/// A mask at one step: query rows at absolute positions queryStart.., key columns at absolute positions
/// kvOffset.. (the reference's get_mask_sizes: kv_length columns starting at kv_offset).
struct MaskShape {
    MaskKind kind = MaskKind::Full;
    std::int64_t span = 0; ///< sliding window or chunk size
    std::int64_t queryLength = 0;
    std::int64_t queryStart = 0;
    std::int64_t kvLength = 0;
    std::int64_t kvOffset = 0;
    bool operator==(const MaskShape&) const = default;
};

/// Pure geometry of the mask view. Every row's visible keys are one interval, so a mask of any size is
/// drawn as one rectangle per row.
class MaskGeometry {
public:
    /// The mask of the layer's last update: queries are its newest queryLength positions.
    static MaskShape shapeOf(const trace::LayerState& layer, MaskKind kind, std::int64_t span);
    /// The layer's mask, its kind from the layer: chunked where the session names a chunk for it (`chunkSize` >
    /// 0), sliding for a sliding layer (its window travels with the events), full otherwise.
    static MaskShape shapeFor(const trace::LayerState& layer, std::int64_t chunkSize);
    /// Whether query row `row` may attend key column `column`.
    static bool allowed(const MaskShape& shape, std::int64_t row, std::int64_t column);
    /// The columns row `row` may attend, as [first, last) clipped to [0, kvLength); first == last if none.
    static std::pair<std::int64_t, std::int64_t> allowedColumns(const MaskShape& shape, std::int64_t row);
};

} // namespace kvscope::gui
