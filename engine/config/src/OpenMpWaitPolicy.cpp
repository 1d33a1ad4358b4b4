// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/OpenMpWaitPolicy.h"

#include <cstdlib>
#include <unistd.h>

namespace kvscope::config {

void OpenMpWaitPolicy::makePassive(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) {
        return;
    }
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    // The running binary itself, whatever argv[0] says (a relative path, a symlink, a name found on PATH).
    ::execv("/proc/self/exe", argv);
    // No /proc: keep going with the OpenMP default.
}

} // namespace kvscope::config
