#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to running: installs what is missing, builds a release with the inspector and opens kvscope on
# its built-in default: the default preset stepping live. Without a display (no DISPLAY or
# WAYLAND_DISPLAY, QT_QPA_PLATFORM unset) kvscope says so on stderr, renders the default live session
# offscreen to kvscope-default.png and exits 0. Extra arguments go to kvscope, e.g.
# `scripts/run.sh --preset gemma3 --cache quantized --nbits 2` or `scripts/run.sh sessions/llama-dynamic.kvsess`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
cmake --preset release -DKVSCOPE_GUI=ON
cmake --build --preset release --target kvscope
exec build/release/gui/kvscope "$@"
