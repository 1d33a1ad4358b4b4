#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes fixtures with the installed Transformers release (transformers_cache_fixtures.py) for each seed and
# replays them with `kvscope-cli conform`; fails unless every one passes.
#   release-conformance.sh [--fixtures SCRIPT] KVSCOPE_CLI OUT_DIR COUNT SEED...
# SCRIPT (default transformers_cache_fixtures.py) is a fixture writer of this folder taking OUT --seed --count.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
script=transformers_cache_fixtures.py
if [ "${1:-}" = --fixtures ]; then
    script="$2"
    shift 2
fi
cli="$1" out="$2" count="$3"
shift 3
rm -rf "$out"
for seed in "$@"; do
    "$here/peer-python.sh" "$here/$script" "$out/seed$seed" --seed "$seed" --count "$count"
    report=$("$cli" conform "$out/seed$seed") || { echo "$report"; exit 1; }
    echo "$report" | tail -n 3
    echo "$report" | grep -q "^$count passed, 0 failed" || { echo "$report"; exit 1; }
done
