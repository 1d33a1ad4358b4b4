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

} // namespace
} // namespace kvscope::gui
