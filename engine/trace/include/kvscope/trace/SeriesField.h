// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <string_view>

namespace kvscope::trace {

/// Quantities a chart can plot over steps (Timeline::seriesOf).
enum class SeriesField : std::uint8_t {
    SeqLength,
    StoredTokens, ///< occupancy
    KvLength,
    ResidualTokens,
    QuantizedTokens,
    BytesDeviceFullPrecision, ///< the three memory tiers
    BytesDeviceQuantized,
    BytesHost,
    WallNs, ///< step duration; cache-wide whatever the layer
};

std::string_view toString(SeriesField field);

/// What `field` is in `state` for one layer, or with layer -1 for the whole cache (the memory totals, or
/// the sum over layers); WallNs is the step's whatever the layer. The one mapping seriesOf plots.
double seriesValue(const StepState& state, std::int32_t layer, SeriesField field);

} // namespace kvscope::trace
