#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the vLLM environment's Python (scripts/vllm-env.sh) with the given arguments. A missing environment is a
# failure, not a skip: CI must not pass without the real vLLM.
set -uo pipefail
venv="${KVSCOPE_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/vllm}"
if [ ! -x "$venv/bin/python" ]; then
    echo "kvscope peers: no vLLM environment at $venv; make it with scripts/vllm-env.sh (scripts/test.sh does)" >&2
    exit 1
fi
exec "$venv/bin/python" "$@"
