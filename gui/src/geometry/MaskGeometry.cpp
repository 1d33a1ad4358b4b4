// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/MaskGeometry.h"

#include "kvscope/trace/LayerKind.h"

#include <algorithm>

namespace kvscope::gui {

MaskShape MaskGeometry::shapeOf(const trace::LayerState& layer, MaskKind kind, std::int64_t span) {
    MaskShape shape;
    shape.kind = span > 0 ? kind : MaskKind::Full;
    shape.span = span;
    shape.queryLength = std::max<std::int64_t>(layer.queryLength, 0);
    shape.queryStart = std::max<std::int64_t>(layer.seqLength - shape.queryLength, 0);
    shape.kvLength = std::max<std::int64_t>(layer.kvLength, 0);
    shape.kvOffset = std::max<std::int64_t>(layer.kvOffset, 0);
    return shape;
}

MaskShape MaskGeometry::shapeFor(const trace::LayerState& layer, std::int64_t chunkSize) {
    if (chunkSize > 0) {
        return shapeOf(layer, MaskKind::Chunked, chunkSize);
    }
    if (trace::isSlidingWindow(layer.kind)) {
        return shapeOf(layer, MaskKind::Sliding, layer.windowSize);
    }
    return shapeOf(layer, MaskKind::Full, 0);
}

std::pair<std::int64_t, std::int64_t> MaskGeometry::allowedColumns(const MaskShape& shape, std::int64_t row) {
    const std::int64_t query = shape.queryStart + row;
    std::int64_t firstPosition = 0;
    if (shape.kind == MaskKind::Sliding) {
        firstPosition = query - shape.span + 1;
    } else if (shape.kind == MaskKind::Chunked) {
        firstPosition = query / shape.span * shape.span;
    }
    const std::int64_t first = std::clamp<std::int64_t>(firstPosition - shape.kvOffset, 0, shape.kvLength);
    const std::int64_t last = std::clamp<std::int64_t>(query + 1 - shape.kvOffset, 0, shape.kvLength);
    return {first, std::max(first, last)};
}

bool MaskGeometry::allowed(const MaskShape& shape, std::int64_t row, std::int64_t column) {
    const auto [first, last] = allowedColumns(shape, row);
    return column >= first && column < last;
}

} // namespace kvscope::gui
