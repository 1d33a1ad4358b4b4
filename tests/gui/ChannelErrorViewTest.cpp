// SPDX-License-Identifier: GPL-3.0-or-later
// ChannelErrorView: each layer's row shows its latest report at the current step in the chosen measure, against
// literal reports; the headline names the cache's types and the worst key channel; hovering gives a cell's
// figures; a click selects the row's layer; a session without reports says how to get them.

#include "kvscope/gui/views/ChannelErrorView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QTest>
#include <set>

namespace kvscope::gui {
namespace {

using Reports = std::vector<std::tuple<std::int64_t, std::int32_t, trace::ChannelErrorEvent>>;

// Two KV heads of 4 key and 2 value channels. Layer 1's head 1 channel 2 holds keys 8x its head's median channel
// and errs most by step 2; by step 3 it errs less.
Reports reports() {
    const trace::ChannelErrorEvent layer0{2, 12, {0.1F, 0.2F, 0.1F, 0.1F, 0.3F, 0.1F, 0.1F, 0.1F},
                                          {1.0F, 1.0F, 1.0F, 1.0F, 1.0F, 2.0F, 1.0F, 1.0F},
                                          {0.05F, 0.05F, 0.05F, 0.05F}, {1.0F, 1.0F, 1.0F, 0.5F}};
    const trace::ChannelErrorEvent layer1{2, 12, {0.1F, 0.1F, 0.1F, 0.1F, 0.1F, 0.1F, 0.5F, 0.1F},
                                          {1.0F, 1.0F, 1.0F, 1.0F, 1.0F, 1.0F, 8.0F, 1.0F},
                                          {0.05F, 0.05F, 0.05F, 0.2F}, {1.0F, 1.0F, 1.0F, 1.0F}};
    trace::ChannelErrorEvent later = layer1;
    later.tokens = 15;
    later.keyError[6] = 0.25F;
    return {{0, 0, layer0}, {0, 1, layer1}, {3, 1, later}};
}


TEST(ChannelErrorViewTest, EachLayersRowIsItsLatestReportInTheChosenMeasure) {
    SessionController session;
    ViewSelection selection;
    ChannelErrorView view(session, selection);
    view.resize(900, 320);
    testing::loadWithChannelErrors(session, reports());
    session.setCurrentStep(2);
    ASSERT_TRUE(view.hasReports());
    const struct {
        ChannelErrorView::Measure measure;
        int layer;
        bool keys;
        int head;
        int channel;
        double value;
    } table[] = {
        {ChannelErrorView::Measure::Error, 0, true, 1, 0, 0.3},  {ChannelErrorView::Measure::Error, 1, true, 1, 2, 0.5},
        {ChannelErrorView::Measure::Error, 1, false, 1, 1, 0.2}, {ChannelErrorView::Measure::Size, 1, true, 1, 2, 8.0},
        {ChannelErrorView::Measure::Size, 0, false, 1, 1, 0.5},  {ChannelErrorView::Measure::Relative, 1, true, 1, 2, 0.0625},
        {ChannelErrorView::Measure::Relative, 0, false, 1, 1, 0.1},
    };
    for (const auto& row : table) {
        view.setMeasure(row.measure);
        const std::optional<double> value = view.valueAt(row.layer, row.keys, row.head, row.channel);
        ASSERT_TRUE(value.has_value()) << row.layer << " " << row.head << " " << row.channel;
        EXPECT_NEAR(*value, row.value, 1e-6) << row.layer << " " << row.head << " " << row.channel;
    }
    // Outside a report, or a layer without one.
    EXPECT_FALSE(view.valueAt(0, true, 2, 0).has_value());
    EXPECT_FALSE(view.valueAt(0, false, 0, 2).has_value());
    EXPECT_FALSE(view.valueAt(5, true, 0, 0).has_value());
    // Each panel's scale tops at its largest value.
    view.setMeasure(ChannelErrorView::Measure::Error);
    EXPECT_NEAR(view.scaleTop(true), 0.5, 1e-6);
    EXPECT_NEAR(view.scaleTop(false), 0.2, 1e-6);
    view.setMeasure(ChannelErrorView::Measure::Size);
    EXPECT_NEAR(view.scaleTop(true), 8.0, 1e-6);
    // Step 3: layer 1's later report.
    view.setMeasure(ChannelErrorView::Measure::Error);
    session.setCurrentStep(3);
    EXPECT_NEAR(*view.valueAt(1, true, 1, 2), 0.25, 1e-6);
    EXPECT_NEAR(view.scaleTop(true), 0.3, 1e-6);
}

TEST(ChannelErrorViewTest, TheHeadlineNamesTheTypesAndTheWorstKeyChannel) {
    SessionController session;
    ViewSelection selection;
    ChannelErrorView view(session, selection);
    testing::loadWithChannelErrors(session, reports());
    session.setCurrentStep(2);
    EXPECT_EQ(view.headline().toStdString(),
              "Step 2: quantisation error (RMS) per layer, KV head and channel; keys q8_0, values q4_0, rotated "
              "(Walsh-Hadamard) before quantising. Worst key channel: layer 1, head 1, channel 2, error 0.5 over its "
              "12 tokens (its keys 8× the head's median channel).");
    session.setCurrentStep(3);
    EXPECT_NE(view.headline().indexOf(QStringLiteral("Worst key channel: layer 0, head 1, channel 0, error 0.3 over "
                                                      "its 12 tokens (its keys 1× the head's median channel)")),
              -1)
        << view.headline().toStdString();
    testing::loadWithChannelErrors(session, reports(), R"({"type_k": "q4_0", "type_v": "f16", "attn_rotation": false})");
    EXPECT_NE(view.headline().indexOf(QStringLiteral("keys q4_0, values f16, not rotated (--attn-rotation off)")), -1)
        << view.headline().toStdString();
}

TEST(ChannelErrorViewTest, HoveringGivesACellsFiguresAndAClickSelectsItsLayer) {
    SessionController session;
    ViewSelection selection;
    ChannelErrorView view(session, selection);
    view.resize(900, 320);
    view.show();
    testing::loadWithChannelErrors(session, reports());
    session.setCurrentStep(2);
    const std::set<std::string> texts = testing::toolTipsOver(view);
    for (const char* expected : {
             "Layer 1, key head 1, channel 2\nquantisation error 0.5 (RMS over the 12 tokens quantised by step 0)\n"
             "channel size 8 (RMS), 8× the head's median channel\nerror ÷ size 0.0625\nlayer's error over all its key "
             "channels 0.2",
             "Layer 1, value head 1, channel 1\nquantisation error 0.2 (RMS over the 12 tokens quantised by step 0)\n"
             "channel size 1 (RMS), 1× the head's median channel\nerror ÷ size 0.2\nlayer's error over all its value "
             "channels 0.109",
         }) {
        EXPECT_EQ(texts.count(expected), 1U) << expected;
    }
    // Layers 2 to 7 have no report: their rows say so.
    EXPECT_EQ(texts.count("Layer 5: no token quantised by this step"), 1U);
    // A click on a row selects its layer.
    int rowOfLayer1 = -1;
    for (int y = 0; y < view.height() && rowOfLayer1 < 0; ++y) {
        if (view.layerAt(QPoint(view.width() / 4, y)) == 1) {
            rowOfLayer1 = y;
        }
    }
    ASSERT_GE(rowOfLayer1, 0);
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(view.width() / 4, rowOfLayer1));
    EXPECT_EQ(selection.selectedLayer(), 1);
    EXPECT_EQ(view.layerAt(QPoint(2, rowOfLayer1)), -1) << "the labels are not a row";
}

TEST(ChannelErrorViewTest, ASessionWithoutReportsHasNothingToShow) {
    SessionController session;
    ViewSelection selection;
    ChannelErrorView view(session, selection);
    view.resize(600, 240);
    EXPECT_FALSE(view.hasReports());
    testing::loadSynthetic(session, testing::smallSession(10));
    EXPECT_FALSE(view.hasReports());
    EXPECT_TRUE(view.headline().isEmpty());
    EXPECT_EQ(view.layerAt(QPoint(300, 150)), -1);
    EXPECT_TRUE(testing::toolTipsOver(view).empty());
    // It paints its message without a report to paint.
    const QImage image = view.grab().toImage();
    EXPECT_FALSE(image.isNull());
}

} // namespace
} // namespace kvscope::gui
