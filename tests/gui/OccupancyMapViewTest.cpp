#include "kvscope/gui/views/OccupancyMapView.h"

#include "GuiTestHelpers.h"
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

} // namespace
} // namespace kvscope::gui
