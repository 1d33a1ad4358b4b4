// SPDX-License-Identifier: GPL-3.0-or-later
// ChannelErrorHistory: each layer's latest channel error report at a step, read as the timeline grows; damaged
// reports left out; the worst channel, a head's median and a layer's overall error against literal tables.

#include "kvscope/gui/models/ChannelErrorHistory.h"

#include "GuiTestHelpers.h"

namespace kvscope::gui {
namespace {

trace::ChannelErrorEvent report(std::int64_t tokens, std::vector<float> keyError) {
    std::vector<float> sizes(keyError.size(), 1.0F);
    return {2, tokens, std::move(keyError), sizes, {0.1F, 0.1F}, {1.0F, 1.0F}};
}

TEST(ChannelErrorHistoryTest, EachLayersLatestReportAtOrBeforeAStep) {
    trace::Timeline timeline;
    const std::vector<trace::Event> events = {
        {0, 0, 0, trace::UpdateEvent{}},
        {0, 1, 1, trace::UpdateEvent{}},
        {0, 0, 2, report(12, {0.1F, 0.2F})},
        {0, 1, 3, report(12, {0.3F, 0.4F})},
        {2, 0, 4, report(14, {0.5F, 0.6F})},
        // Damaged: 3 key errors for 2 heads.
        {3, 1, 5, report(15, {0.1F, 0.2F, 0.3F})},
    };
    ChannelErrorHistory history;
    for (const trace::Event& event : events) {
        timeline.emit(event);
    }
    history.update(timeline);
    EXPECT_FALSE(history.empty());
    EXPECT_EQ(history.layerCount(), 2);
    const struct {
        std::int32_t layer;
        std::int64_t step;
        std::int64_t tokens; // 0: no report
    } table[] = {{0, 0, 12}, {0, 1, 12}, {0, 2, 14}, {0, 9, 14}, {1, 0, 12}, {1, 3, 12},
                 {2, 3, 0},  {-1, 3, 0}};
    for (const auto& row : table) {
        const ChannelErrorHistory::Report* found = history.latestAt(row.layer, row.step);
        EXPECT_EQ(found == nullptr ? 0 : found->event.tokens, row.tokens) << row.layer << " at " << row.step;
    }
    // A report filed late (an older step than the newest) belongs to the newest step, as the timeline files it.
    timeline.emit({5, 1, 6, report(16, {0.1F, 0.2F})});
    timeline.emit({4, 0, 7, report(20, {0.7F, 0.8F})});
    history.update(timeline);
    EXPECT_EQ(history.latestAt(0, 4)->event.tokens, 14);
    EXPECT_EQ(history.latestAt(0, 5)->event.tokens, 20);
    history.reset();
    EXPECT_TRUE(history.empty());
    EXPECT_EQ(history.latestAt(0, 5), nullptr);
}

TEST(ChannelErrorHistoryTest, WorstChannelMedianAndOverallError) {
    // Two heads of four channels: head 1's channel 2 errs most, its keys 8x the head's median channel.
    const std::vector<float> errors = {0.1F, 0.2F, 0.1F, 0.1F, 0.1F, 0.1F, 0.5F, 0.1F};
    const std::vector<float> sizes = {1.0F, 3.0F, 2.0F, 4.0F, 1.0F, 1.0F, 8.0F, 1.0F};
    const auto worst = ChannelErrorHistory::worst(errors, sizes, 2);
    ASSERT_TRUE(worst.has_value());
    EXPECT_EQ(worst->head, 1);
    EXPECT_EQ(worst->channel, 2);
    EXPECT_FLOAT_EQ(worst->error, 0.5F);
    EXPECT_FLOAT_EQ(worst->size, 8.0F);
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::headMedian(sizes, 2, 0), 2.5); // of 1, 2, 3, 4
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::headMedian(sizes, 2, 1), 1.0); // of 1, 1, 1, 8
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::headMedian({1.0F, 5.0F, 2.0F}, 1, 0), 2.0);
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::headMedian(sizes, 2, 2), 0.0);
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::headMedian(sizes, 3, 0), 0.0);
    EXPECT_NEAR(ChannelErrorHistory::overall({3.0F, 4.0F}), std::sqrt(12.5), 1e-12);
    EXPECT_DOUBLE_EQ(ChannelErrorHistory::overall({}), 0.0);
    EXPECT_FALSE(ChannelErrorHistory::worst(errors, sizes, 3).has_value());
    EXPECT_FALSE(ChannelErrorHistory::worst(errors, {1.0F}, 2).has_value());
    EXPECT_FALSE(ChannelErrorHistory::worst({}, {}, 2).has_value());
}

TEST(ChannelErrorHistoryTest, ReportsWhoseListsDoNotFitTheirHeadsAreInconsistent) {
    EXPECT_TRUE(ChannelErrorHistory::consistent(report(3, {0.1F, 0.2F})));
    trace::ChannelErrorEvent event = report(3, {0.1F, 0.2F});
    event.heads = 0;
    EXPECT_FALSE(ChannelErrorHistory::consistent(event));
    event = report(0, {0.1F, 0.2F});
    EXPECT_FALSE(ChannelErrorHistory::consistent(event)) << "no token";
    event = report(3, {0.1F, 0.2F});
    event.keySize.pop_back();
    EXPECT_FALSE(ChannelErrorHistory::consistent(event));
    event = report(3, {0.1F, 0.2F});
    event.valueError = {0.1F};
    EXPECT_FALSE(ChannelErrorHistory::consistent(event));
    event = report(3, {});
    EXPECT_FALSE(ChannelErrorHistory::consistent(event));
}

} // namespace
} // namespace kvscope::gui
