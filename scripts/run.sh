#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to running: installs what is missing, builds a release with the inspector and opens kvscope on
# the first guided tour (a sliding window, stepping live, explained step by step); Help → Welcome lists
# the other tours. Without a display (no DISPLAY or WAYLAND_DISPLAY, QT_QPA_PLATFORM unset) kvscope says
# so on stderr, renders the tour offscreen to kvscope-default.png and exits 0. Arguments replace the tour
# and go to kvscope, e.g. `scripts/run.sh --preset gemma3 --cache quantized --nbits 2`,
# `scripts/run.sh --tour preemption` or `scripts/run.sh sessions/llama-dynamic.kvsess`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
cmake --preset release -DKVSCOPE_GUI=ON
cmake --build --preset release --target kvscope
if [ $# -eq 0 ]; then
    set -- --tour sliding-window
fi
exec build/release/gui/kvscope "$@"
