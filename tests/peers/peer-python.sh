#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the peers' Python (scripts/peers-env.sh) with the given arguments. A missing environment is a
# failure, not a skip: the peer tests are the project's oracle, and CI must not pass without them.
set -uo pipefail
venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
if [ ! -x "$venv/bin/python" ]; then
    echo "kvscope peers: no peer environment at $venv (Transformers, kvpress, llama.cpp ...);" \
         "make it with scripts/peers-env.sh (scripts/test.sh does)" >&2
    exit 1
fi
exec "$venv/bin/python" "$@"
