// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/EventExplainer.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

TEST(EventExplainerTest, EveryKindHasASummaryAndAReason) {
    trace::StepState state;
    state.layers.resize(2);
    const std::vector<trace::EventPayload> payloads = {
        trace::UpdateEvent{1, 10, 10, -1, 10, 4096},
        trace::MaskSizesEvent{1, 10, 0},
        trace::WindowSlideEvent{1, 5, 13, 8},
        trace::QuantizeFlushEvent{8, 9, 1, 8, 4096, 1024, 0.1, 0.01, 0.02},
        trace::TransferEvent{trace::TransferDirection::Offload},
        trace::TransferEvent{trace::TransferDirection::Prefetch, trace::TransferLane::Prefetch},
        trace::CropEvent{4, 10, 4},
        trace::ReorderEvent{{1, 0}},
        trace::BatchRepeatEvent{2, 1, 2},
        trace::BatchSelectEvent{{0}, 2, 1},
        trace::ResetEvent{},
        trace::MemoryEvent{1, 2, 3},
        trace::StepBeginEvent{65, "A"},
        trace::StepEndEvent{66, "B", 1000},
        trace::ComputeEvent{},
        trace::LogitsEvent{{1}, {-0.1f}, false},
        trace::CompressionEvent{10, 6, 2, 4, 12, {}, {}},
    };
    ASSERT_EQ(payloads.size(), trace::kEventKindCount + 1);
    for (const trace::EventPayload& payload : payloads) {
        const trace::Event event{3, 1, 7, payload};
        EXPECT_FALSE(EventExplainer::summary(event).isEmpty()) << int(event.kind());
        EXPECT_FALSE(EventExplainer::why(event, state).isEmpty()) << int(event.kind());
    }
}

TEST(EventExplainerTest, ReasonsNameTheCause) {
    trace::StepState state;
    const trace::Event slide{12, 3, 0, trace::WindowSlideEvent{1, 5, 13, 8}};
    const QString why = EventExplainer::why(slide, state);
    EXPECT_TRUE(why.contains("Layer 3")) << why.toStdString();
    EXPECT_TRUE(why.contains("last 8 tokens")) << why.toStdString();
    EXPECT_TRUE(why.contains("position 5")) << why.toStdString();
    const trace::Event flush{12, 1, 0, trace::QuantizeFlushEvent{8, 9, 1, 8, 4096, 1024, 0.1, 0.01, 0.0234}};
    const QString flushWhy = EventExplainer::why(flush, state);
    EXPECT_TRUE(flushWhy.contains("residual had grown to 9 tokens")) << flushWhy.toStdString();
    EXPECT_TRUE(flushWhy.contains("2.34%")) << flushWhy.toStdString();
}

TEST(EventExplainerTest, FormatsBytes) {
    EXPECT_EQ(EventExplainer::formatBytes(0), "0 B");
    EXPECT_EQ(EventExplainer::formatBytes(1023), "1023 B");
    EXPECT_EQ(EventExplainer::formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(EventExplainer::formatBytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
}

} // namespace
} // namespace kvscope::gui
