// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/MainWindow.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/window/AppLauncher.h"
#include "kvscope/gui/window/TransportBar.h"

#include <QAction>
#include <QDockWidget>
#include <QDropEvent>
#include <QMimeData>
#include <QSettings>
#include <QTemporaryDir>
#include <QUrl>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilities() {
    EngineCapabilities result;
    result.presets = {"llama"};
    result.defaultPreset = "llama";
    return result;
}

QString savedSession(const QTemporaryDir& dir, const QString& name, std::int64_t tokens) {
    SessionController session;
    testing::loadSynthetic(session, testing::smallSession(tokens, true));
    const QString path = dir.filePath(name);
    EXPECT_EQ(session.saveAs(path), QString());
    return path;
}

TEST(MainWindowTest, RenderedWindowIsNotBlank) {
    MainWindow window(testing::syntheticFactory(), capabilities());
    window.resize(1400, 900);
    testing::loadSynthetic(window.session(), testing::smallSession(60, true));
    window.session().setCurrentStep(30);
    window.show();
    const QImage image = window.renderImage();
    EXPECT_EQ(image.size(), QSize(1400, 900));
    EXPECT_TRUE(AppLauncher::looksPainted(image));
}

TEST(MainWindowTest, OpenAddsToRecentFilesAndDropOpens) {
    QSettings().remove(QStringLiteral("recentFiles"));
    QTemporaryDir dir;
    const QString first = savedSession(dir, "first.kvs", 10);
    const QString second = savedSession(dir, "second.kvs", 14);
    MainWindow window(testing::syntheticFactory(), capabilities());
    EXPECT_EQ(window.openFileNow(first), QString());
    EXPECT_EQ(window.session().stepCount(), 11);
    EXPECT_EQ(window.recentFiles().front(), QFileInfo(first).absoluteFilePath());

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(second)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &drop);
    // A dropped file is read in the background: the window stays responsive meanwhile.
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() == 15; }));
    EXPECT_EQ(window.recentFiles().size(), 2);
    EXPECT_EQ(window.recentFiles().front(), QFileInfo(second).absoluteFilePath());

    EXPECT_FALSE(window.openFileNow(dir.filePath("missing.kvs")).isEmpty());
    EXPECT_EQ(window.session().stepCount(), 15) << "a failed open keeps the session";
}

TEST(MainWindowTest, CompareModeShowsTheCompareDock) {
    QTemporaryDir dir;
    const QString other = savedSession(dir, "other.kvs", 10);
    MainWindow window(testing::syntheticFactory(), capabilities());
    window.show();
    testing::loadSynthetic(window.session(), testing::smallSession(10, true));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("compareDock"));
    ASSERT_NE(dock, nullptr);
    EXPECT_FALSE(dock->isVisible());
    EXPECT_EQ(window.compareWithFileNow(other), QString());
    EXPECT_TRUE(dock->isVisible());
    window.session().setCurrentStep(4);
    EXPECT_EQ(window.compareSession().currentStep(), 4);
}

TEST(MainWindowTest, LiveSessionRunsInTheBackground) {
    MainWindow window(testing::syntheticFactory(), capabilities());
    kvscope::config::RunSettings settings;
    settings.tokens = 10;
    window.startLive(settings);
    window.transport()->speedBox();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFinished(); }, 20000));
    EXPECT_EQ(window.session().stepCount(), 10);
}

} // namespace
} // namespace kvscope::gui
