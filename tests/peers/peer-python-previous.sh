#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the peers' Python (peer-python.sh) with the previous Transformers release (requirements/peers-previous.txt)
# in front of the pinned one: that release is installed --no-deps once into
# <peers environment>-previous/<hash of the pin file>, and found first on PYTHONPATH. Like peer-python.sh, a
# missing peers' environment, or a release pip cannot install, is a failure, not a skip.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pins="$here/../../requirements/peers-previous.txt"
venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
if [ ! -x "$venv/bin/python" ]; then
    echo "kvscope peers: no peer environment at $venv; make it with scripts/peers-env.sh" >&2
    exit 1
fi
overlay="$venv-previous/$(sha256sum "$pins" | cut -c1-16)"
if [ ! -f "$overlay/.complete" ]; then
    rm -rf "$overlay"
    mkdir -p "$overlay"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$overlay" \
        -r "$pins" 2>&1 | sed '/^WARNING: Location .* is ignored/d' >&2
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "kvscope peers: cannot install $(grep -v '^#' "$pins")" >&2; exit 1; }
    touch "$overlay/.complete"
fi
PYTHONPATH="$overlay${PYTHONPATH:+:$PYTHONPATH}" exec "$here/peer-python.sh" "$@"
