// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerKind.h"

#include <cstdint>
#include <string_view>

namespace kvscope::trace {

/// Where a layer's K/V tensors live. InTransit is for views that place a time cursor inside a
/// transfer's [beginNs, endNs); the reducer never sets it because transfers are recorded complete.
enum class Residency : std::uint8_t {
    Device = 0,
    Host = 1,
    InTransit = 2,
    Last = InTransit, ///< the highest value a session file may hold
};

std::string_view toString(Residency residency);

/// What one cache layer looks like after a step; plain data, folded from events by StateReducer.
struct LayerState {
    bool initialized = false; ///< an Update has been seen
    LayerKind kind = LayerKind::Dynamic;

    std::int64_t seqLength = 0; ///< tokens seen
    std::int64_t storedTokens = 0; ///< tokens physically held
    std::int64_t capacity = -1; ///< -1 = unbounded
    std::int64_t returnedTokens = 0; ///< K/V rows returned by the last update
    std::int64_t lastUpdateStep = -1;

    std::int64_t queryLength = 0; ///< from the last MaskSizes
    std::int64_t kvLength = 0;
    std::int64_t kvOffset = 0;

    /// Sliding layers only: absolute positions [windowStart, windowEnd) held, and the window length.
    std::int64_t windowStart = 0;
    std::int64_t windowEnd = 0;
    std::int64_t windowSize = 0;
    std::int64_t evictedTokens = 0; ///< total positions evicted by window slides

    /// Quantized layers only.
    std::int64_t residualTokens = 0; ///< full-precision tokens not yet quantized
    std::int64_t quantizedTokens = 0; ///< tokens in the quantized store
    std::int64_t lastFlushStep = -1;
    double lastFlushRelativeError = 0.0;

    Residency residency = Residency::Device;
    std::int64_t bytesDevice = 0; ///< all device bytes of the layer
    std::int64_t bytesDeviceQuantized = 0; ///< the part of bytesDevice in quantized form
    std::int64_t bytesHost = 0;

    std::int64_t batchSize = 0; ///< 0 = unknown; set by batch repeat/select

    /// Device bytes kept at full precision (the third memory tier).
    std::int64_t bytesDeviceFullPrecision() const { return bytesDevice - bytesDeviceQuantized; }

    bool operator==(const LayerState&) const = default;
};

} // namespace kvscope::trace
