// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope: the Qt inspector. Plugs the LibTorch engine (through runtime::LiveSession) into the GUI.

#include "AttachedServerEngine.h"
#include "RuntimeSessionEngine.h"
#include "ServingSessionEngine.h"

#include "kvscope/gui/window/AppLauncher.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/tours/TourCatalog.h"

#include "kvscope/config/BuildInfo.h"
#include "kvscope/config/OpenMpWaitPolicy.h"

#include <QApplication>
#include <QTextStream>

#include <cstdio>
#include <string_view>
#include <variant>

int main(int argc, char* argv[]) {
    using namespace kvscope;
    config::OpenMpWaitPolicy::makePassive(argv);
    for (int i = 1; i < argc; ++i) {
        // Answered before anything loads, so that it works without a display or an engine.
        if (std::string_view(argv[i]) == "--version") {
            std::printf("%s\n", config::BuildInfo::versionLine("kvscope").c_str());
            return 0;
        }
    }
    // Decided before QApplication exists: without a display Qt would abort, so render offscreen instead.
    const bool noDisplay = gui::AppLauncher::noDisplay();
    if (noDisplay) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvscope"));
    QApplication::setApplicationName(QStringLiteral("kvscope"));
    QApplication::setApplicationVersion(QString::fromUtf8(config::BuildInfo::version()));
    QTextStream errors(stderr);

    gui::EngineCapabilities capabilities;
    try {
        capabilities = app::RuntimeSessionEngine::capabilities();
    } catch (const std::exception& error) {
        errors << "kvscope: " << error.what() << Qt::endl;
        return 2;
    }
    QStringList arguments = QApplication::arguments();
    if (arguments.contains(QStringLiteral("--list-tours"))) {
        QTextStream(stdout) << gui::TourCatalog::listJson(QString::fromStdString(capabilities.defaultPreset));
        return 0;
    }
    if (noDisplay && !arguments.contains(QStringLiteral("--screenshot")) && !arguments.contains(QStringLiteral("--help")) &&
        !arguments.contains(QStringLiteral("-h"))) {
        errors << "kvscope: no display available (DISPLAY and WAYLAND_DISPLAY are unset); rendering offscreen to "
                  "kvscope-default.png instead"
               << Qt::endl;
        arguments << QStringLiteral("--screenshot") << QStringLiteral("kvscope-default.png");
    }
    const auto parsed = gui::AppLauncher::parse(arguments, capabilities);
    if (const auto* message = std::get_if<QString>(&parsed)) {
        const bool help = arguments.contains(QStringLiteral("--help")) || arguments.contains(QStringLiteral("-h"));
        errors << (help ? QString() : QStringLiteral("kvscope: ")) << *message << Qt::endl;
        return help ? 0 : 2;
    }
    const gui::LaunchOptions& options = std::get<gui::LaunchOptions>(parsed);

    gui::MainWindow window(
        [](const config::RunSettings& settings) -> std::unique_ptr<gui::SessionEngine> {
            if (settings.attach) {
                return std::make_unique<app::AttachedServerEngine>(settings);
            }
            if (settings.serving) {
                return std::make_unique<app::ServingSessionEngine>(settings);
            }
            return std::make_unique<app::RuntimeSessionEngine>(settings);
        },
        capabilities);
    if (const std::optional<int> exitCode = gui::AppLauncher::launch(window, options, errors)) {
        return *exitCode;
    }
    window.show();
    return QApplication::exec();
}
