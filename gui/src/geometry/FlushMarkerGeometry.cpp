// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/FlushMarkerGeometry.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvscope::gui {

std::vector<FlushMarkerGeometry::Marker> FlushMarkerGeometry::markers(const std::vector<Flush>& flushes,
                                                                      std::int32_t layer, std::int64_t first,
                                                                      std::int64_t last, double pixels,
                                                                      double markerPixels) {
    std::vector<Marker> result;
    if (last < first) {
        return result;
    }
    // Steps a marker covers; below one step every flushing step gets its own.
    const double span = static_cast<double>(last - first + 1);
    const double stepsPerMarker = pixels > markerPixels ? std::max(1.0, span * markerPixels / pixels) : span;
    std::map<std::int64_t, Marker> byBucket;
    for (const Flush& flush : flushes) {
        if ((layer >= 0 && flush.layer != layer) || flush.step < first || flush.step > last) {
            continue;
        }
        const auto bucket =
            static_cast<std::int64_t>(std::floor(static_cast<double>(flush.step - first) / stepsPerMarker));
        const auto [at, added] = byBucket.try_emplace(bucket, Marker{flush.step, flush.residualBefore,
                                                                     flush.relativeError});
        Marker& marker = at->second;
        if (!added) {
            marker.step = std::min(marker.step, flush.step);
            marker.height = std::max(marker.height, flush.residualBefore);
            marker.error = std::max(marker.error, flush.relativeError);
        }
    }
    result.reserve(byBucket.size());
    for (const auto& [bucket, marker] : byBucket) {
        result.push_back(marker);
    }
    return result;
}

} // namespace kvscope::gui
