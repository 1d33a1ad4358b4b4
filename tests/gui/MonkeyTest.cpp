// SPDX-License-Identifier: GPL-3.0-or-later
// Random user actions (fixed seed) on the main window over replayed and live sessions: must not crash,
// and the session context must stay consistent.

#include "GuiTestHelpers.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/window/TransportBar.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QAbstractButton>
#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QToolBar>
#include <QComboBox>
#include <QSlider>
#include <QTest>

#include <random>

namespace kvscope::gui {
namespace {

TEST(MonkeyTest, RandomActionsKeepTheWindowConsistent) {
    EngineCapabilities capabilities;
    capabilities.presets = {"llama"};
    capabilities.defaultPreset = "llama";
    MainWindow window(testing::syntheticFactory(), capabilities);
    window.resize(1200, 800);
    window.show();
    TransportBar* transport = window.transport();
    std::mt19937 random(20261130);
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    // Views and their children only: buttons and menus would open modal dialogs that wait for a user.
    std::vector<QWidget*> targets;
    for (QWidget* widget : window.findChildren<QWidget*>()) {
        if (!qobject_cast<QAbstractButton*>(widget) && !qobject_cast<QMenuBar*>(widget) &&
            !qobject_cast<QMenu*>(widget) && !qobject_cast<QToolBar*>(widget) && !qobject_cast<QComboBox*>(widget) &&
            !qobject_cast<QComboBox*>(widget->parentWidget())) {
            targets.push_back(widget);
        }
    }
    for (int action = 0; action < 600; ++action) {
        switch (pick(14)) {
        case 0:
            testing::loadSynthetic(window.session(), testing::smallSession(5 + pick(60), pick(2) == 0));
            break;
        case 1: {
            kvscope::config::RunSettings settings;
            settings.tokens = 1 + pick(40);
            settings.cache.kind = pick(2) ? kvscope::config::CacheKind::Offloaded : kvscope::config::CacheKind::Dynamic;
            window.startLive(settings);
            if (pick(2) == 0) {
                transport->playAction()->trigger(); // pauses what startLive set playing
            }
            break;
        }
        case 2:
            transport->stepAction()->trigger();
            break;
        case 3:
            transport->stepBackAction()->trigger();
            break;
        case 4:
            transport->playAction()->trigger();
            break;
        case 5:
            (pick(2) ? transport->toEndAction() : transport->toStartAction())->trigger();
            break;
        case 6:
            transport->slider()->setValue(pick(std::max(1, transport->slider()->maximum() + 1)));
            break;
        case 7:
            window.selection().setSelectedLayer(pick(12) - 2);
            break;
        case 8:
            window.selection().setStepRange(pick(30), pick(30) + 1);
            break;
        case 9:
            window.resize(400 + pick(1200), 300 + pick(800));
            break;
        case 10: {
            QWidget* target = targets[static_cast<std::size_t>(pick(static_cast<int>(targets.size())))];
            if (target->isVisible() && target->width() > 2 && target->height() > 2) {
                QTest::mouseClick(target, Qt::LeftButton, {}, QPoint(pick(target->width()), pick(target->height())));
            }
            break;
        }
        case 11:
            window.session().runToEnd();
            break;
        case 12:
            window.session().cancelRun();
            break;
        default:
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
            break;
        }
        const SessionController& session = window.session();
        ASSERT_TRUE(session.stepCount() == 0 || (session.currentStep() >= 0 && session.currentStep() < session.stepCount()))
            << "action " << action;
        ASSERT_EQ(session.state()->step, session.stepCount() == 0 ? 0 : session.currentStep()) << "action " << action;
    }
    transport->setPlaying(false);
    window.session().cancelRun();
    window.session().waitForEngine();
    EXPECT_FALSE(window.renderImage().isNull());
}

} // namespace
} // namespace kvscope::gui
