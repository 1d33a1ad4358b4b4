// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ProgressOutput.h"

#include <unistd.h>

namespace kvscope::cli {

void ProgressOutput::addFlag(CLI::App& command, bool& progress) {
    command.add_flag("!--no-progress", progress, "No progress line on stderr (none is drawn unless stderr is a terminal)");
}

bool ProgressOutput::drawn(bool wanted) { return wanted && ::isatty(STDERR_FILENO) == 1; }

} // namespace kvscope::cli
