// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/CompressionLayout.h"

#include <gtest/gtest.h>
#include <vector>

using namespace kvscope::trace;

namespace {

template <typename T, typename Span> std::vector<T> listOf(Span span) {
    return std::vector<T>(span.begin(), span.end());
}

} // namespace

TEST(CompressionLayoutTest, WriterRecordsEveryKthDroppedTokenWithinTheLimit) {
    struct Case {
        std::int64_t dropped;
        std::int32_t heads;
        std::int64_t stride;
        std::int64_t recorded;
    };
    const Case cases[] = {
        {0, 2, 1, 0},      {1, 2, 1, 1},       {512, 2, 1, 512},  {513, 2, 2, 257}, {1024, 1, 1, 1024},
        {1025, 1, 2, 513}, {4000, 8, 32, 125}, {10, 4096, 10, 1}, {10, 0, 1, 10},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(CompressionLayout::droppedStride(c.dropped, c.heads), c.stride)
            << c.dropped << " / " << c.heads;
        EXPECT_EQ(CompressionLayout::droppedRecorded(c.dropped, c.heads), c.recorded)
            << c.dropped << " / " << c.heads;
        EXPECT_LE(CompressionLayout::droppedRecorded(c.dropped, c.heads) * std::max(c.heads, 1),
                  std::max<std::int64_t>(kCompressionDroppedLimit, c.heads));
    }
}

TEST(CompressionLayoutTest, UniformHeadsSplitKeptThenDroppedHeadAfterHead) {
    const CompressionEvent event{
        5, 3, 2, 2, 6, {0, 3, 4, 1, 3, 4, 1, 2, 0, 2}, {0.25F, 0.5F, 0.125F, 0.75F}, {9, 8, 7, 6, 5, 4}, {}};
    const CompressionLayout layout(event);
    ASSERT_TRUE(layout.consistent());
    ASSERT_EQ(layout.heads(), 2);
    EXPECT_EQ(layout.keptCount(1), 3);
    EXPECT_EQ(layout.droppedCount(1), 2);
    EXPECT_EQ(listOf<std::int64_t>(layout.keptPositions(0)), (std::vector<std::int64_t>{0, 3, 4}));
    EXPECT_EQ(listOf<std::int64_t>(layout.keptPositions(1)), (std::vector<std::int64_t>{1, 3, 4}));
    EXPECT_EQ(listOf<float>(layout.keptScores(1)), (std::vector<float>{6, 5, 4}));
    EXPECT_EQ(listOf<std::int64_t>(layout.droppedPositions(0)), (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(listOf<std::int64_t>(layout.droppedPositions(1)), (std::vector<std::int64_t>{0, 2}));
    EXPECT_EQ(listOf<float>(layout.droppedScores(1)), (std::vector<float>{0.125F, 0.75F}));
    EXPECT_EQ(layout.keptTotal(), 6);
    EXPECT_EQ(layout.droppedTotal(), 4);
    EXPECT_TRUE(layout.keptScores(2).empty());
    EXPECT_EQ(layout.keptCount(-1), 0);
}

TEST(CompressionLayoutTest, HeadsKeepingDifferentCountsFollowKeptPerHead) {
    // Head 0 keeps 3 of 4 (drops 1), head 1 keeps 1 (drops 3); nothing leaves the cache (lengthAfter 4).
    const CompressionEvent event{4,  4,     2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {0.5F, 0.1F, 0.2F, 0.3F},
                                 {}, {3, 1}};
    const CompressionLayout layout(event);
    ASSERT_TRUE(layout.consistent());
    EXPECT_EQ(listOf<std::int64_t>(layout.keptPositions(0)), (std::vector<std::int64_t>{0, 2, 3}));
    EXPECT_EQ(listOf<std::int64_t>(layout.keptPositions(1)), (std::vector<std::int64_t>{3}));
    EXPECT_EQ(listOf<std::int64_t>(layout.droppedPositions(0)), (std::vector<std::int64_t>{1}));
    EXPECT_EQ(listOf<std::int64_t>(layout.droppedPositions(1)), (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_EQ(listOf<float>(layout.droppedScores(1)), (std::vector<float>{0.1F, 0.2F, 0.3F}));
    EXPECT_TRUE(layout.keptScores(0).empty());
    EXPECT_EQ(layout.droppedTotal(), 4);
}

TEST(CompressionLayoutTest, ListsThatDisagreeWithTheCountsReadAsInconsistent) {
    const CompressionEvent good{5, 3, 2, 2, 6, {0, 3, 4, 1, 3, 4, 1, 2, 0, 2}, {}, {}, {}};
    ASSERT_TRUE(CompressionLayout(good).consistent());
    std::vector<CompressionEvent> bad(9, good);
    bad[0].heads = 0;
    bad[1].heads = CompressionLayout::kMaxHeads + 1;
    bad[2].positions.pop_back();
    bad[3].droppedScores = {1.0F};
    bad[4].keptScores = {1.0F, 2.0F};
    bad[5].keptPerHead = {3};    // one count for two heads
    bad[6].keptPerHead = {6, 0}; // more than lengthBefore
    bad[7].droppedCount = 3;     // not lengthBefore - lengthAfter
    bad[8].lengthAfter = 6;
    for (std::size_t index = 0; index < bad.size(); ++index) {
        const CompressionLayout layout(bad[index]);
        EXPECT_FALSE(layout.consistent()) << index;
        EXPECT_EQ(layout.heads(), 0) << index;
        EXPECT_TRUE(layout.keptPositions(0).empty()) << index;
    }
}

TEST(CompressionLayoutTest, UnrecordedKeptPositionsLeaveOnlyTheDropped) {
    // keptRecorded 0: the kept positions were over kCompressionKeptLimit and are not in the record.
    const CompressionEvent event{4, 2, 1, 2, 0, {1, 3}, {0.5F, 0.25F}, {}, {}};
    const CompressionLayout layout(event);
    ASSERT_TRUE(layout.consistent());
    EXPECT_TRUE(layout.keptPositions(0).empty());
    EXPECT_EQ(layout.keptCount(0), 2);
    EXPECT_EQ(listOf<std::int64_t>(layout.droppedPositions(0)), (std::vector<std::int64_t>{1, 3}));
}

TEST(CompressionLayoutTest, ChannelPressesSplitTheirPrunedChannelsPerHead) {
    // ThinK (1.5): 3 tokens, all kept by both heads; head 0 zeroed channels 1 and 6, head 1 channels 0 and 2.
    CompressionEvent event{3, 3, 2, 0, 6, {0, 1, 2, 0, 1, 2}, {}, {}, {}};
    event.prunedChannels = {1, 6, 0, 2};
    const CompressionLayout layout(event);
    ASSERT_TRUE(layout.consistent());
    EXPECT_EQ(layout.prunedChannelCount(), 2);
    EXPECT_EQ(listOf<std::int32_t>(layout.prunedChannels(0)), (std::vector<std::int32_t>{1, 6}));
    EXPECT_EQ(listOf<std::int32_t>(layout.prunedChannels(1)), (std::vector<std::int32_t>{0, 2}));
    EXPECT_TRUE(layout.prunedChannels(2).empty());
    EXPECT_EQ(layout.droppedTotal(), 0);
    // A list that does not split evenly over the heads is damage.
    event.prunedChannels = {1, 6, 0};
    EXPECT_FALSE(CompressionLayout(event).consistent());
    // Token presses have none.
    EXPECT_EQ(CompressionLayout(CompressionEvent{3, 3, 2, 0, 6, {0, 1, 2, 0, 1, 2}, {}, {}, {}}).prunedChannelCount(), 0);
}

TEST(CompressionLayoutTest, ReRotatedKeysSplitTheirNewPositionsPerHead) {
    // KeyRerotation (1.7): 5 tokens, each head keeps 3 in position order; their keys now sit at 0 1 2.
    CompressionEvent event{5, 3, 2, 2, 6, {0, 3, 4, 1, 2, 4, /* dropped */ 1, 2, 0, 3}, {}, {}, {}};
    event.rotaryPositions = {0, 1, 2, 0, 1, 2};
    const CompressionLayout layout(event);
    ASSERT_TRUE(layout.consistent());
    EXPECT_TRUE(layout.rerotated());
    EXPECT_EQ(listOf<std::int64_t>(layout.keptPositions(1)), (std::vector<std::int64_t>{1, 2, 4}));
    EXPECT_EQ(listOf<std::int64_t>(layout.rotaryPositions(0)), (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_EQ(listOf<std::int64_t>(layout.rotaryPositions(1)), (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_TRUE(layout.rotaryPositions(2).empty());
    // One new position per recorded kept position, or the event is damage.
    event.rotaryPositions.pop_back();
    EXPECT_FALSE(CompressionLayout(event).consistent());
    EXPECT_FALSE(CompressionLayout(event).rerotated());
    // A map without recorded kept positions has nothing to map.
    event.rotaryPositions = {0, 1, 2, 0, 1, 2};
    event.keptRecorded = 0;
    event.positions = {1, 2, 0, 3};
    EXPECT_FALSE(CompressionLayout(event).consistent());
    // Presses that keep the keys' rotations have none.
    EXPECT_FALSE(CompressionLayout(CompressionEvent{3, 3, 1, 0, 3, {0, 1, 2}, {}, {}, {}}).rerotated());
}
