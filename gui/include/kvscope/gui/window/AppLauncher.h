// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/config/RunSettings.h"

#include <QSize>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <variant>

class QImage;
class QTextStream;

namespace kvscope::gui {

class MainWindow;

/// What the command line asked for (docs/CLI.md: `kvscope [FILE] [--preset NAME]
/// [--screenshot OUT.png [--step K] [--layer L] [--position P]]`, plus the live run's cache options, --compare FILE and
/// --synthetic LAYERSxTOKENS for a model-free demo session).
struct LaunchOptions {
    QString file;
    config::RunSettings live;
    QString screenshot;
    std::optional<std::int64_t> step;
    /// The layer selected in the screenshot (the layer table, the mask and the heads view follow it).
    std::optional<std::int64_t> layer;
    /// The token position selected in the screenshot (the transcript scrolls to it; the map outlines it).
    std::optional<std::int64_t> position;
    QString compareFile;
    QSize size{1600, 1000};
    std::int32_t syntheticLayers = 0;
    std::int64_t syntheticTokens = 0;
    /// --press-scores: the occupancy map's press score overlay on.
    bool pressScores = false;
    /// --events: the event log's tab in front of the layer table.
    bool eventLog = false;
    /// --compare-without-press: compare mode against the same live run without its press.
    bool compareWithoutPress = false;
    /// --tour NAME: the guided tour whose session this is (its options are already in `live`).
    QString tour;
    /// Nothing to show was asked for (no file, model, workload, tour or synthetic session): the welcome page.
    bool welcome = false;
    /// --compare-serving: compare mode against the same workload served with these settings.
    std::optional<config::ServingSettings> compareServing;
};

/// Parses the command line and starts the window: a file, a synthetic session, or a live run (the
/// default preset when nothing is given). With --screenshot it waits for the session, renders the
/// window offscreen at the step and exits instead of running the event loop.
class AppLauncher {
public:
    /// Options, or a message naming the bad argument and what is allowed.
    static std::variant<LaunchOptions, QString> parse(const QStringList& arguments, const EngineCapabilities& capabilities);
    /// True when no display is reachable: no DISPLAY, no WAYLAND_DISPLAY and no QT_QPA_PLATFORM chosen.
    static bool noDisplay();
    /// Fills the window as asked. Returns the exit code in screenshot mode (0 written, 2 bad input or
    /// failed session), or nullopt when the caller should show the window and run the event loop.
    static std::optional<int> launch(MainWindow& window, const LaunchOptions& options, QTextStream& errors);
    /// An image is a real screenshot when it is not one flat colour (a blank window, or one with a frame).
    static bool looksPainted(const QImage& image);
};

} // namespace kvscope::gui
