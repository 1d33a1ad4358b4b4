// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/EventLogView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/models/EventLogModel.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QTest>

namespace kvscope::gui {
namespace {

TEST(EventLogViewTest, ShowsTheCurrentStepAndFilters) {
    SessionController session;
    ViewSelection selection;
    EventLogView view(session, selection);
    view.resize(800, 400);
    testing::loadSynthetic(session, testing::smallSession(30, true));
    session.setCurrentStep(6);
    const auto events = session.timeline().eventsOfStep(6);
    EXPECT_EQ(view.model()->rowCount(), static_cast<int>(events.size()));

    QTest::keyClicks(view.filterEdit(), "window");
    EXPECT_GT(view.model()->rowCount(), 0);
    EXPECT_LT(view.model()->rowCount(), static_cast<int>(events.size()));
    view.filterEdit()->clear();

    view.kindFilter()->setCurrentIndex(view.kindFilter()->findText("update"));
    EXPECT_EQ(view.model()->rowCount(), 8);
    selection.setSelectedLayer(2);
    view.layerOnly()->setChecked(true);
    EXPECT_EQ(view.model()->rowCount(), 1);
    session.stepForward(); // the filter survives a step
    EXPECT_EQ(view.model()->rowCount(), 1);
    EXPECT_EQ(view.model()->eventAt(0)->step, 7);
}

} // namespace
} // namespace kvscope::gui
