// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpanBlock.h"

#include "EventCodec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using kvscope::trace::EventCodec;
using kvscope::trace::SpanBlock;
using kvscope::trace::TimedSpan;
using kvscope::trace::TimedSpans;

namespace {

using Lane = TimedSpan::Lane;

// Spans as a session records them and as damage could make them: times going back (a prefetch recorded before the
// update it serves), a span of no length, the cache-wide layer -1, measured and modelled, a step that goes back.
const std::vector<TimedSpan> kSpans = {
    {1000, 1500, 3, 1, Lane::Prefetch, false},
    {900, 2100, 3, 1, Lane::Compute, true},
    {2100, 2100, 3, -1, Lane::Offload, false},
    {-50, 40, 0, 31000, Lane::Compute, false},
    {INT64_MAX - 10, INT64_MAX, 2147483647, 0, Lane::Offload, true},
};

} // namespace

TEST(SpanBlockTest, RoundTripsSpansAsTheyAre) {
    const std::vector<std::uint8_t> raw = SpanBlock::encode(70000, kSpans);
    EXPECT_EQ(raw.size(), 12U + kSpans.size() * 23);
    EXPECT_EQ(SpanBlock::spansIn(raw.size()), kSpans.size());
    TimedSpans into;
    into.add(kvscope::trace::Event{7, 2, 0, kvscope::trace::ComputeEvent{}}); // appended after what is there
    EXPECT_EQ(SpanBlock::decode(raw, into), 70000U);
    ASSERT_EQ(into.size(), kSpans.size() + 1);
    EXPECT_EQ(std::vector<TimedSpan>(into.spans().begin() + 1, into.spans().end()), kSpans);
}

TEST(SpanBlockTest, StoresColumnsOfDifferences) {
    // The layout of sessions/FORMAT.md, byte for byte: lanes (bit 2 measured), layers, step and begin differences
    // from the span before, lengths.
    const std::vector<TimedSpan> spans = {{100, 130, 5, 2, Lane::Prefetch, false}, {90, 95, 6, 0, Lane::Compute, true}};
    const std::vector<std::uint8_t> raw = SpanBlock::encode(3, spans);
    std::vector<std::uint8_t> expected = {3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // first span 3, two spans
                                          0, 2 | 4,                           // lanes
                                          2, 0, 0, 0,                         // layers
                                          5, 0, 0, 0, 1, 0, 0, 0};            // steps: 5, +1
    for (const std::int64_t value : {std::int64_t{100}, std::int64_t{-10}, std::int64_t{30}, std::int64_t{5}}) {
        std::uint8_t bytes[8];
        std::memcpy(bytes, &value, 8);
        expected.insert(expected.end(), bytes, bytes + 8); // begins: 100, -10; lengths: 30, 5
    }
    EXPECT_EQ(raw, expected);
}

TEST(SpanBlockTest, RefusesWhatIsNotABlock) {
    const std::vector<std::uint8_t> raw = SpanBlock::encode(0, kSpans);
    TimedSpans into;
    std::vector<std::uint8_t> shorter(raw.begin(), raw.end() - 1);
    EXPECT_THROW(SpanBlock::decode(shorter, into), EventCodec::Invalid);
    EXPECT_EQ(SpanBlock::spansIn(shorter.size()), 0U);
    std::vector<std::uint8_t> counted = raw;
    counted[8] = 200; // a count the bytes do not hold
    EXPECT_THROW(SpanBlock::decode(counted, into), EventCodec::Invalid);
    for (const std::uint8_t lane : {std::uint8_t{3}, std::uint8_t{7}, std::uint8_t{8}, std::uint8_t{0xFF}}) {
        std::vector<std::uint8_t> unknown = raw;
        unknown[12 + 2] = lane;
        EXPECT_THROW(SpanBlock::decode(unknown, into), EventCodec::Invalid) << int{lane};
    }
    EXPECT_EQ(into.size(), 0U) << "nothing is kept of a block that does not read";
    // A layer below -1 (damage) is kept as -1, as TimedSpans::add keeps an event's.
    std::vector<std::uint8_t> below = raw;
    below[12 + kSpans.size()] = 0xFB; // layer -5 as i16, first span
    below[12 + kSpans.size() + 1] = 0xFF;
    ASSERT_NO_THROW(SpanBlock::decode(below, into));
    EXPECT_EQ(into.spans()[0].layer, -1);
}
