// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"

// A press is one file under engine/presses/ plus one line in engine/presses/PressList.h (docs/presses.md,
// "Adding a press"). The file is compiled twice: into kvscope_config, torch-free, for its description
// (KVSCOPE_PRESS_ENGINE is 0 and the file's `#if KVSCOPE_PRESS_ENGINE` part, its LibTorch code, is left
// out), and into kvscope_press with its factory (KVSCOPE_PRESS_ENGINE is 1; the description is compiled but
// private there). The list names every registration explicitly, so static libraries keep them all.
#ifndef KVSCOPE_PRESS_ENGINE
#define KVSCOPE_PRESS_ENGINE 0
#endif

#if KVSCOPE_PRESS_ENGINE
#define KVSCOPE_PRESS_DESCRIPTION(id)                                                                        \
    [[maybe_unused]] static ::kvscope::config::PressDescription kvscopeUnusedPressDescription_##id()
#else
#define KVSCOPE_PRESS_DESCRIPTION(id) ::kvscope::config::PressDescription kvscopePressDescription_##id()
#endif
