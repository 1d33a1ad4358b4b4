// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpanBlock.h"

#include "ByteReader.h"
#include "ByteWriter.h"
#include "EventCodec.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace kvscope::trace {

namespace {

constexpr std::uint8_t kMeasuredBit = 4;

template <typename T> T at(std::span<const std::uint8_t> column, std::size_t index) {
    T value;
    std::memcpy(&value, column.data() + index * sizeof(T), sizeof(T));
    return value;
}

} // namespace

std::vector<std::uint8_t> SpanBlock::encode(std::uint64_t firstSpan, std::span<const TimedSpan> spans) {
    std::vector<std::uint8_t> raw;
    raw.reserve(kHeaderBytes + spans.size() * kSpanBytes);
    ByteWriter out(raw);
    out.put(firstSpan);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(spans.size()));
    // Column by column; steps and times as the difference from the span before (wrapping): a layer's spans follow
    // each other by a few microseconds, so the differences are small and repeat, and zstd makes little of them.
    for (const TimedSpan& span : spans) {
        out.put<std::uint8_t>(static_cast<std::uint8_t>(static_cast<std::uint8_t>(span.lane) |
                                                        (span.measured ? kMeasuredBit : 0)));
    }
    for (const TimedSpan& span : spans) {
        out.put<std::int16_t>(span.layer);
    }
    std::uint32_t step = 0;
    for (const TimedSpan& span : spans) {
        out.put<std::uint32_t>(static_cast<std::uint32_t>(span.step) - step);
        step = static_cast<std::uint32_t>(span.step);
    }
    std::uint64_t begin = 0;
    for (const TimedSpan& span : spans) {
        out.put<std::uint64_t>(static_cast<std::uint64_t>(span.beginNs) - begin);
        begin = static_cast<std::uint64_t>(span.beginNs);
    }
    for (const TimedSpan& span : spans) {
        out.put<std::uint64_t>(static_cast<std::uint64_t>(span.endNs) - static_cast<std::uint64_t>(span.beginNs));
    }
    return raw;
}

std::size_t SpanBlock::spansIn(std::uint64_t rawBytes) {
    return rawBytes >= kHeaderBytes && (rawBytes - kHeaderBytes) % kSpanBytes == 0
               ? static_cast<std::size_t>((rawBytes - kHeaderBytes) / kSpanBytes)
               : 0;
}

std::uint64_t SpanBlock::decode(std::span<const std::uint8_t> raw, TimedSpans& into) {
    ByteReader in(raw);
    const auto firstSpan = in.get<std::uint64_t>();
    const std::size_t count = in.get<std::uint32_t>();
    if (raw.size() != kHeaderBytes + count * kSpanBytes) {
        throw EventCodec::Invalid("a spans block of " + std::to_string(count) + " spans in " +
                                  std::to_string(raw.size()) + " bytes");
    }
    const auto lanes = in.take(count);
    const auto layers = in.take(count * 2);
    const auto steps = in.take(count * 4);
    const auto begins = in.take(count * 8);
    const auto lengths = in.take(count * 8);
    for (const std::uint8_t lane : lanes) {
        if ((lane & ~kMeasuredBit) > static_cast<std::uint8_t>(TimedSpan::Lane::Compute)) {
            throw EventCodec::Invalid("a span of lane " + std::to_string(lane));
        }
    }
    std::uint32_t step = 0;
    std::uint64_t begin = 0;
    for (std::size_t index = 0; index < count; ++index) {
        step += at<std::uint32_t>(steps, index);
        begin += at<std::uint64_t>(begins, index);
        TimedSpan span;
        span.beginNs = static_cast<std::int64_t>(begin);
        span.endNs = static_cast<std::int64_t>(begin + at<std::uint64_t>(lengths, index));
        // As TimedSpans::add files them: a step beyond i32 or a layer below -1 (damage) is clamped, not wrapped.
        span.step = static_cast<std::int32_t>(std::min<std::uint32_t>(step, 0x7FFFFFFFU));
        span.layer = std::max<std::int16_t>(at<std::int16_t>(layers, index), -1);
        span.lane = static_cast<TimedSpan::Lane>(lanes[index] & ~kMeasuredBit);
        span.measured = (lanes[index] & kMeasuredBit) != 0;
        into.append(span);
    }
    return firstSpan;
}

} // namespace kvscope::trace
