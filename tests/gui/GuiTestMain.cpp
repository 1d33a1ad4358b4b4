// SPDX-License-Identifier: GPL-3.0-or-later
// One QApplication for all GoogleTest cases of a GUI test binary; offscreen unless told otherwise.

#include <QApplication>
#include <QStandardPaths>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    // Keeps tests' QSettings (recent files, window state) away from the user's.
    QStandardPaths::setTestModeEnabled(true);
    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvscope-tests"));
    QApplication::setApplicationName(QStringLiteral("kvscope-tests"));
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
