#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to green: installs what is missing, makes the peers' environment (scripts/peers-env.sh: the real
# Transformers, kvpress, tokenizers and llama.cpp the tests compare with; kept until its pins change),
# configures, builds and runs the whole suite with ctest.
# Usage: scripts/test.sh [preset]   (dev by default; asan runs the suite under Address/UB sanitizers;
#        libtorch2 builds the engine and CLI against a LibTorch 2: KVSCOPE_TORCH_CMAKE_PREFIX, by default the
#        peers' PyTorch, `python -c 'import torch; print(torch.utils.cmake_prefix_path)'`)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
scripts/install-dependencies.sh
if [ "$preset" = libtorch2 ] && [ -z "${KVSCOPE_TORCH_CMAKE_PREFIX:-}" ]; then
    peers_python=$(scripts/peers-env.sh)
    KVSCOPE_TORCH_CMAKE_PREFIX=$("$peers_python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
    export KVSCOPE_TORCH_CMAKE_PREFIX
fi
# The peers' environment builds llama.cpp while kvscope builds: its downloads overlap the compiling.
scripts/peers-env.sh >/dev/null &
peers=$!
cmake --preset "$preset"
cmake --build --preset "$preset"
wait "$peers" || { echo "kvscope: the peers' environment could not be made (scripts/peers-env.sh, above)" >&2; exit 1; }
ctest --preset "$preset"
