// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunOptionTable.h"

#include <QString>

class QCommandLineParser;

namespace kvscope::gui {

/// config::RunOptionTable as QCommandLineParser options (kvscope's command line): the same names, value
/// words, help, defaults and refusals as kvscope-cli run's.
class QtRunOptions {
public:
    /// Adds every option of the table; --help shows `defaults`' values.
    static void addTo(QCommandLineParser& parser, const config::RunSettings& defaults);
    /// Adds `options` (another static table: paged::ServingOptionTable's) the same way.
    static void addTo(QCommandLineParser& parser, const config::RunSettings& defaults,
                      const std::vector<config::RunOption>& options);
    /// Reads the options given to `parser` into `settings`, in table order (the last of a repeated
    /// single-valued option counts). Returns "" or the refusal ("--tokens: must be a whole number ...").
    static QString apply(const QCommandLineParser& parser, config::RunSettings& settings);
    static QString apply(const QCommandLineParser& parser, config::RunSettings& settings,
                         const std::vector<config::RunOption>& options);
};

} // namespace kvscope::gui
