// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/TimedSpans.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvscope::trace {

/// A Spans chunk's payload (format 1.9, sessions/FORMAT.md): a block of a session's transfers and compute spans
/// stored as columns, so that opening an offloaded session copies them out with a few loops instead of decoding
/// millions of events.
class SpanBlock {
public:
    /// Bytes of the payload before the columns (the first span's index and the count) and per span.
    static constexpr std::size_t kHeaderBytes = 8 + 4;
    static constexpr std::size_t kSpanBytes = 1 + 2 + 4 + 8 + 8;

    /// The payload of `spans`, the session's spans from index `firstSpan` on.
    static std::vector<std::uint8_t> encode(std::uint64_t firstSpan, std::span<const TimedSpan> spans);
    /// How many spans a payload of `rawBytes` holds (its size says it); 0 when no block is that long.
    static std::size_t spansIn(std::uint64_t rawBytes);
    /// Appends the payload's spans to `into` and returns the index of its first span; EventCodec::Invalid where
    /// the bytes are not such a block (a size that disagrees with the count, an unknown lane).
    static std::uint64_t decode(std::span<const std::uint8_t> raw, TimedSpans& into);
};

} // namespace kvscope::trace
