// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/OccupancyMapView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QImage>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>

namespace kvscope::gui {
namespace {

TEST(OccupancyMapViewTest, ClickSelectsTheLayerUnderTheCursor) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(800, 400);
    testing::loadSynthetic(session, testing::smallSession(40));
    QSignalSpy selected(&selection, &ViewSelection::selectionChanged);
    EXPECT_EQ(view.layerAt(5), -1) << "the legend is not a layer";
    int y = 0;
    while (view.layerAt(y) != 3 && y < 400) {
        ++y;
    }
    ASSERT_LT(y, 400);
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(400, y + 2));
    EXPECT_EQ(selection.selectedLayer(), 3);
    EXPECT_EQ(selected.count(), 1);
}

TEST(OccupancyMapViewTest, PaintsSlotStatesInTheirColours) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(900, 300);
    const QImage empty = view.grab().toImage();
    testing::loadSynthetic(session, testing::smallSession(40));
    session.goToEnd();
    const QImage image = view.grab().toImage();
    EXPECT_NE(image, empty);
    // The synthetic session has full-precision, quantized and slid-out positions at its end.
    bool seen[kSlotStateCount] = {};
    for (int y = 0; y < image.height(); y += 2) {
        for (int x = 0; x < image.width(); x += 2) {
            for (int state = 0; state < kSlotStateCount; ++state) {
                seen[state] |= image.pixelColor(x, y) == PlotStyle::slotColour(static_cast<SlotState>(state));
            }
        }
    }
    EXPECT_TRUE(seen[static_cast<int>(SlotState::FullPrecision)]);
    EXPECT_TRUE(seen[static_cast<int>(SlotState::Quantized)]);
    EXPECT_TRUE(seen[static_cast<int>(SlotState::SlidOut)]);
}

TEST(OccupancyMapViewTest, TheTokenStripAndHoverNameTheTokenAtAPosition) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(4000, 300); // wide enough for one readable cell per position
    const auto options = testing::smallSession(12);
    testing::loadSynthetic(session, options);
    session.goToEnd();
    const std::vector<std::string> prompt = synthetic::SyntheticSession::promptPieces(options);
    ASSERT_FALSE(prompt.empty());
    // Position 0 sits at the left edge of the map; hovering there names the first prompt token.
    int x = 0;
    while (view.tokenAt(x).isEmpty() && x < 400) {
        ++x;
    }
    ASSERT_LT(x, 400);
    EXPECT_EQ(view.tokenAt(x).toStdString(), prompt.front());
    const QString said = view.describe(0, 1);
    EXPECT_TRUE(said.contains(QStringLiteral("position 1"))) << said.toStdString();
    EXPECT_TRUE(said.contains(QString::fromStdString(SessionTokens::visible(prompt[1])))) << said.toStdString();
    // The token the last step produced follows the prompt and every fed token.
    const std::int64_t produced = SessionTokens::producedPosition(session.metadata(), session.currentStep());
    EXPECT_EQ(produced, static_cast<std::int64_t>(prompt.size()) + session.currentStep());
    EXPECT_FALSE(view.describe(0, produced).contains(QStringLiteral("\u201c\u201d")));
}

TEST(OccupancyMapViewTest, ZoomedInTheMapLabelsColumnsWithTokens) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(900, 400);
    const auto options = testing::smallSession(200);
    testing::loadSynthetic(session, options);
    session.goToEnd();
    const PositionSpan all = view.span();
    EXPECT_EQ(all.first, 0);
    EXPECT_GT(all.count, 200);
    EXPECT_TRUE(view.columnLabels().empty()) << "a few pixels per position: no label fits";
    const QImage unlabelled = view.grab().toImage();

    // Wheel notches over the middle of the map zoom in about the position there.
    const int middle = 112 + (900 - 112 - 10) / 2;
    const double mapWidth = 900 - 112 - 10;
    const std::int64_t middlePosition = OccupancyGeometry::xToPosition(middle - 112, all, mapWidth);
    for (int notch = 0; notch < 12; ++notch) {
        QWheelEvent wheel(QPointF(middle, 200), view.mapToGlobal(QPointF(middle, 200)), {}, QPoint(0, 120),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(&view, &wheel);
    }
    const PositionSpan zoomed = view.span();
    EXPECT_LT(zoomed.count, 60);
    EXPECT_GT(zoomed.first, 0);
    EXPECT_EQ(OccupancyGeometry::xToPosition(middle - 112, zoomed, mapWidth), middlePosition)
        << "the position under the pointer stays there";
    const std::vector<ColumnLabel> labels = view.columnLabels();
    ASSERT_EQ(static_cast<std::int64_t>(labels.size()), zoomed.count) << "every column labelled";
    EXPECT_EQ(labels.front().position, zoomed.first);
    // Each label sits over its column: hovering there names the same token.
    const ColumnLabel& label = labels[labels.size() / 2];
    const int x = 112 + static_cast<int>((label.x0 + label.x1) / 2);
    const std::optional<std::string> piece =
        SessionTokens::pieceAt(session.metadata(), session.timeline(), label.position);
    ASSERT_TRUE(piece);
    EXPECT_EQ(view.tokenAt(x).toStdString(), *piece);
    EXPECT_NE(view.grab().toImage(), unlabelled);

    // A double click shows every position again, without labels.
    QTest::mouseDClick(&view, Qt::LeftButton, {}, QPoint(middle, 200));
    EXPECT_EQ(view.span(), all);
    EXPECT_TRUE(view.columnLabels().empty());
}

TEST(OccupancyMapViewTest, ASessionWithoutTextsHasNoColumnLabels) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(4000, 300);
    trace::SessionMetadata metadata; // format 1.0: no prompt pieces
    std::vector<trace::Event> events = {{0, 0, 0, trace::UpdateEvent{5, 5, 5, -1, 5, 64}},
                                        {0, -1, 1, trace::StepEndEvent{65, "A", 1}}};
    session.setRecordedSession(metadata, events, "old");
    EXPECT_TRUE(view.columnLabels().empty());
}

TEST(OccupancyMapViewTest, APressDropsAreColouredAndItsScoresShaded) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(900, 300);
    // One dynamic layer of one KV head: a 6-token prefill, then a press keeps 0, 3 and 5 (scores 1, 2, 3).
    std::vector<trace::Event> events = {
        {0, 0, 0, trace::UpdateEvent{6, 6, 6, -1, 6, 600, trace::LayerKind::Dynamic}},
        {0, 0, 1, trace::CompressionEvent{6, 3, 1, 3, 3, {0, 3, 5, 1, 2, 4}, {0.1F, 0.2F, 0.3F}, {1.0F, 2.0F, 3.0F}, {}}},
        {0, -1, 2, trace::StepEndEvent{7, "x", 10}},
        {1, 0, 3, trace::UpdateEvent{1, 4, 4, -1, 4, 400, trace::LayerKind::Dynamic}},
        {1, -1, 4, trace::StepEndEvent{8, "y", 10}},
    };
    trace::SessionMetadata metadata;
    metadata.cacheSettingsJson = R"({"kind": "dynamic", "press": {"name": "snapkv", "ratio": 0.5, "options": {}}})";
    session.setRecordedSession(metadata, events, "pressed");
    session.setCurrentStep(1);
    const std::vector<std::optional<SlotState>> expected = {
        SlotState::FullPrecision, SlotState::Dropped,       SlotState::Dropped,       SlotState::FullPrecision,
        SlotState::Dropped,       SlotState::FullPrecision, SlotState::FullPrecision, std::nullopt};
    for (std::int64_t position = 0; position < 8; ++position) {
        EXPECT_EQ(view.slotAt(0, position), expected[static_cast<std::size_t>(position)]) << "position " << position;
    }
    EXPECT_TRUE(view.describe(0, 5).contains("press score 3")) << view.describe(0, 5).toStdString();
    EXPECT_TRUE(view.legendEntries().contains(PlotStyle::slotName(SlotState::Dropped)));

    // The overlay: off, the map has no score colour; on, the best kept token is deepest.
    const QRgb best = PlotStyle::scoreColour(1.0).rgb();
    const auto paints = [&view](QRgb colour) {
        const QImage image = view.grab().toImage();
        for (int y = 0; y < image.height(); ++y) {
            for (int x = 0; x < image.width(); ++x) {
                if (image.pixel(x, y) == colour) {
                    return true;
                }
            }
        }
        return false;
    };
    EXPECT_TRUE(paints(PlotStyle::slotColour(SlotState::Dropped).rgb()));
    EXPECT_FALSE(paints(best));
    view.setScoreOverlay(true);
    EXPECT_TRUE(view.hasPressScores());
    EXPECT_TRUE(paints(best));

    // A session without a press keeps its legend to the cache's states.
    testing::loadSynthetic(session, testing::smallSession(10));
    EXPECT_FALSE(view.legendEntries().contains(PlotStyle::slotName(SlotState::Dropped)));
    EXPECT_FALSE(view.hasPressScores());
}

TEST(OccupancyMapViewTest, TheSelectedPositionIsOutlinedAndTheZoomMovesToIt) {
    SessionController session;
    ViewSelection selection;
    OccupancyMapView view(session, selection);
    view.resize(900, 300);
    testing::loadSynthetic(session, testing::smallSession(40));
    session.goToEnd();
    const QImage unselected = view.grab().toImage();
    selection.setSelectedPosition(20);
    EXPECT_NE(view.grab().toImage(), unselected);
    selection.setSelectedPosition(-1);
    EXPECT_EQ(view.grab().toImage(), unselected);
    // Zoomed in on the first positions, selecting a later one brings the span to it.
    view.zoom(0.2, 120);
    ASSERT_LT(view.span().first + view.span().count, 45);
    selection.setSelectedPosition(45);
    EXPECT_LE(view.span().first, 45);
    EXPECT_GT(view.span().first + view.span().count, 45);
}

} // namespace
} // namespace kvscope::gui
