// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/TransportBar.h"

#include "GuiTestHelpers.h"

#include <QAction>
#include <QComboBox>
#include <QSlider>

namespace kvscope::gui {
namespace {

TEST(TransportBarTest, ActionsAndSliderMoveTheStep) {
    SessionController session;
    TransportBar bar(session);
    EXPECT_FALSE(bar.stepAction()->isEnabled()) << "nothing to step without a session";
    testing::loadSynthetic(session, testing::smallSession(20));
    EXPECT_EQ(bar.slider()->maximum(), 20);
    bar.stepAction()->trigger();
    bar.stepAction()->trigger();
    EXPECT_EQ(session.currentStep(), 2);
    EXPECT_EQ(bar.slider()->value(), 2);
    bar.stepBackAction()->trigger();
    EXPECT_EQ(session.currentStep(), 1);
    bar.toEndAction()->trigger();
    EXPECT_EQ(session.currentStep(), 20);
    bar.toStartAction()->trigger();
    EXPECT_EQ(session.currentStep(), 0);
    bar.slider()->setValue(13);
    EXPECT_EQ(session.currentStep(), 13);
    EXPECT_EQ(bar.stepAction()->shortcut(), QKeySequence(Qt::Key_Right));
    EXPECT_EQ(bar.playAction()->shortcut(), QKeySequence(Qt::Key_Space));
    EXPECT_EQ(bar.toStartAction()->shortcut(), QKeySequence(Qt::Key_Home));
}

TEST(TransportBarTest, PlayAdvancesAndStopsAtTheEnd) {
    SessionController session;
    TransportBar bar(session);
    testing::loadSynthetic(session, testing::smallSession(6));
    bar.speedBox()->setCurrentIndex(bar.speedBox()->count() - 1); // fastest
    bar.playAction()->trigger();
    EXPECT_TRUE(bar.playing());
    ASSERT_TRUE(testing::waitUntil([&] { return !bar.playing(); }, 5000));
    EXPECT_EQ(session.currentStep(), 6);
    EXPECT_FALSE(bar.playAction()->isChecked());
}

TEST(TransportBarTest, PlayingALiveRunGeneratesTokens) {
    SessionController session(testing::syntheticFactory());
    TransportBar bar(session);
    kvscope::config::RunSettings settings;
    settings.tokens = 8;
    session.startLive(settings, SessionController::Generation::OnRequest);
    ASSERT_TRUE(testing::waitUntil([&] { return session.stepCount() == 1; }));
    bar.speedBox()->setCurrentIndex(bar.speedBox()->count() - 1);
    bar.setPlaying(true);
    ASSERT_TRUE(testing::waitUntil([&] { return !bar.playing(); }, 8000));
    EXPECT_EQ(session.stepCount(), 8);
    EXPECT_TRUE(session.liveFinished());
    EXPECT_EQ(session.currentStep(), 7);
}

} // namespace
} // namespace kvscope::gui
