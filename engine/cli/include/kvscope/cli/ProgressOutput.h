// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <CLI/CLI.hpp>

namespace kvscope::cli {

/// Whether a long command draws its progress line on stderr: only where stderr is a terminal and
/// --no-progress was not given, so that a log or a CI run gets no `[###....]` lines.
class ProgressOutput {
public:
    /// Adds --no-progress to `command`; every long command takes it (run, serve, fidelity, train, bench,
    /// synthetic, conform), whether or not it draws progress.
    static void addFlag(CLI::App& command, bool& progress);
    /// `wanted` (not --no-progress), and stderr a terminal.
    static bool drawn(bool wanted);
};

} // namespace kvscope::cli
