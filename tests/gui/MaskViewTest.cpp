// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/MaskView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QImage>

namespace kvscope::gui {
namespace {

TEST(MaskViewTest, FollowsTheSelectedLayerAndStep) {
    SessionController session;
    ViewSelection selection;
    MaskView view(session, selection);
    view.resize(500, 300);
    const auto options = testing::smallSession(40);
    testing::loadSynthetic(session, options);
    // Step 0 is the prefill: every prompt token is a query row.
    const MaskShape prefill = view.shapeOf(0);
    EXPECT_EQ(prefill.queryLength, options.promptTokens);
    EXPECT_EQ(prefill.kind, MaskKind::Full);
    session.goToEnd();
    const MaskShape decode = view.shapeOf(0);
    EXPECT_EQ(decode.queryLength, 1);
    // Layer 1 is sliding in the synthetic layout: its mask has the window.
    ASSERT_TRUE(trace::isSlidingWindow(session.state()->layers[1].kind));
    const MaskShape sliding = view.shapeOf(1);
    EXPECT_EQ(sliding.kind, MaskKind::Sliding);
    EXPECT_EQ(sliding.span, options.window);
    const QImage layer0 = view.grab().toImage();
    selection.setSelectedLayer(1);
    EXPECT_NE(view.grab().toImage(), layer0) << "the view redraws for the selected layer";
    EXPECT_EQ(view.shapeOf(99), MaskShape{});
}

TEST(MaskViewTest, ChunkedLayersComeFromTheSessionMetadata) {
    SessionController session;
    ViewSelection selection;
    MaskView view(session, selection);
    auto options = testing::smallSession(20);
    trace::SessionMetadata metadata = testing::syntheticMetadata(options);
    metadata.modelConfigJson = "{}"; // the view reads the trace's record, not the model config
    metadata.attentionChunkSizes = {8, 0};
    session.setRecordedSession(metadata, testing::syntheticEvents(options), "chunked");
    EXPECT_EQ(view.shapeOf(0).kind, MaskKind::Chunked);
    EXPECT_EQ(view.shapeOf(0).span, 8);
    EXPECT_EQ(view.shapeOf(2).kind, MaskKind::Full);
}

TEST(MaskViewTest, NamesWhatAMaskingPressHidesPerKvHead) {
    SessionController session;
    ViewSelection selection;
    MaskView view(session, selection);
    view.resize(500, 300);
    // AdaKV on layer 0 after the prefill: of 12 prompt slots, head 0 hides 2 and head 1 hides 8.
    trace::CompressionEvent masked{12, 12, 2, 10, 0, {}, {}, {}, {10, 4}};
    for (const auto& hidden : std::vector<std::vector<std::int64_t>>{{3, 4}, {0, 1, 2, 5, 6, 7, 8, 9}}) {
        masked.positions.insert(masked.positions.end(), hidden.begin(), hidden.end());
    }
    testing::loadWithCompression(session, 0, masked);
    session.setCurrentStep(0);
    EXPECT_TRUE(view.headMaskNote(0).startsWith("after this step")) << view.headMaskNote(0).toStdString();
    session.setCurrentStep(3);
    EXPECT_EQ(view.headMaskNote(0), "and per KV head, the press hides 2 to 8 of slots 0–11 (KV heads view)");
    EXPECT_TRUE(view.headMaskNote(1).isEmpty()) << "no press decided on layer 1";
    EXPECT_FALSE(view.grab().toImage().isNull());
}

TEST(MaskViewTest, TheSelectedPositionsKeyColumnIsOutlined) {
    SessionController session;
    ViewSelection selection;
    MaskView view(session, selection);
    view.resize(500, 300);
    testing::loadSynthetic(session, testing::smallSession(40));
    const QImage unselected = view.grab().toImage();
    selection.setSelectedPosition(5);
    EXPECT_NE(view.grab().toImage(), unselected);
    // A position past the keys of the step: nothing to outline.
    selection.setSelectedPosition(500);
    EXPECT_EQ(view.grab().toImage(), unselected);
}

} // namespace
} // namespace kvscope::gui
