#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to green: installs what is missing, makes the peers' environment (scripts/peers-env.sh: the real
# Transformers, kvpress, tokenizers and llama.cpp the tests compare with; kept until its pins change) and the
# vLLM one (scripts/vllm-env.sh: vLLM's CPU build, whose pins clash with the peers'),
# configures, builds and runs the whole suite with ctest; with the dev preset, then builds the engine, the CLI and
# their tests against LibTorch 2 (the libtorch2 preset, the peers' PyTorch) and runs those too.
# Usage: scripts/test.sh [preset]   (dev by default; asan runs the suite under Address/UB sanitizers;
#        libtorch2 builds the engine and CLI against a LibTorch 2: KVSCOPE_TORCH_CMAKE_PREFIX, by default the
#        peers' PyTorch, `python -c 'import torch; print(torch.utils.cmake_prefix_path)'`)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
# Each phase says how long it took (docs/testing.md: where a cold run's time goes).
started=$SECONDS
phase_started=$SECONDS
phase_done() { echo "kvscope: $1 took $((SECONDS - phase_started)) s ($((SECONDS - started)) s in all)" >&2; phase_started=$SECONDS; }
scripts/install-dependencies.sh
phase_done "installing the Debian packages"
if [ "$preset" = libtorch2 ] && [ -z "${KVSCOPE_TORCH_CMAKE_PREFIX:-}" ]; then
    peers_python=$(scripts/peers-env.sh)
    KVSCOPE_TORCH_CMAKE_PREFIX=$("$peers_python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
    export KVSCOPE_TORCH_CMAKE_PREFIX
fi
# The peers' environment builds llama.cpp while kvscope builds: its downloads overlap the compiling.
# The vLLM environment after it (both download; one pip at a time keeps the two cores for the compiler).
{ scripts/peers-env.sh >/dev/null && echo "kvscope: the peers' environment took $((SECONDS - started)) s from the start" >&2 &&
  scripts/vllm-env.sh >/dev/null && echo "kvscope: the vLLM environment took $((SECONDS - started)) s from the start" >&2; } &
peers=$!
cmake --preset "$preset"
cmake --build --preset "$preset"
phase_done "building $preset"
wait "$peers" || { echo "kvscope: the peers' or the vLLM environment could not be made (scripts/peers-env.sh," \
    "scripts/vllm-env.sh, above)" >&2; exit 1; }
phase_done "waiting for the peers' environment"
# LibTorch 2 as well (what a user with their own PyTorch, a CUDA one included, builds against): the engine, the
# CLI and their tests again, against the peers' PyTorch 2.13 (CPU). Its build runs beside the dev suite at the
# lowest priority, on the cores the tests leave idle (peers loading, GUI timers, the last long test alone).
libtorch2_build=
if [ "$preset" = dev ]; then
    peers_python=$(scripts/peers-env.sh)
    KVSCOPE_TORCH_CMAKE_PREFIX=$("$peers_python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
    export KVSCOPE_TORCH_CMAKE_PREFIX
    libtorch2_log=build/libtorch2-build.log
    mkdir -p build
    { nice -n 19 cmake --preset libtorch2 && nice -n 19 cmake --build --preset libtorch2 \
          --target kvscope_engine_cli_tests; } >"$libtorch2_log" 2>&1 &
    libtorch2_build=$!
fi
ctest --preset "$preset"
phase_done "ctest ($preset)"
if [ -n "$libtorch2_build" ]; then
    wait "$libtorch2_build" || { tail -n 60 "$libtorch2_log" >&2
        echo "kvscope: the LibTorch 2 build failed ($libtorch2_log, above)" >&2; exit 1; }
    phase_done "finishing the libtorch2 build (begun beside the tests)"
    ctest --preset libtorch2 -L '^(engine/.*|cli|conformance)$'
    phase_done "ctest (libtorch2)"
fi
