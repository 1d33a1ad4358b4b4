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

} // namespace
} // namespace kvscope::gui
