// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// Where the quantization chart draws its flush markers: one per flushing step, or, where flushing steps
/// lie closer on screen than a marker is wide, one per such run, so that a long session draws no more
/// markers than the plot has room for.
class FlushMarkerGeometry {
public:
    struct Flush {
        std::int64_t step;
        std::int32_t layer;
        double residualBefore;
        double relativeError; ///< percent
    };
    struct Marker {
        std::int64_t step;  ///< the run's first flushing step
        double height;      ///< the largest residual flushed in the run
        double error;       ///< the worst error in the run
    };

    /// The markers of `flushes` (any order) within steps [first, last], of layer `layer` or of every layer
    /// (-1), for a plot `pixels` wide over those steps with markers `markerPixels` wide. Ascending by step.
    static std::vector<Marker> markers(const std::vector<Flush>& flushes, std::int32_t layer, std::int64_t first,
                                       std::int64_t last, double pixels, double markerPixels);
};

} // namespace kvscope::gui
