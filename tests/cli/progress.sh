#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Progress lines go to terminals only: `run`, `serve` and `train` draw none into a file or pipe, draw theirs
# on a pseudo-terminal (script(1)), and every long command takes --no-progress.
# Usage: progress.sh KVSCOPE_CLI
set -eu
cli="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "progress.sh: $*" >&2; exit 1; }

"$cli" run --tokens 4 > "$dir/out.json" 2> "$dir/err.txt" || fail "run failed: $(cat "$dir/err.txt")"
if grep -q '\[#' "$dir/err.txt" || grep -q 'tokens' "$dir/err.txt"; then
    fail "run drew its progress bar into a file: $(cat "$dir/err.txt")"
fi
"$cli" serve --workload prefix-caching-example --no-progress > "$dir/serve.json" 2> "$dir/serve-err.txt" \
    || fail "serve refused --no-progress: $(cat "$dir/serve-err.txt")"
"$cli" serve --workload prefix-caching-example > /dev/null 2> "$dir/serve-err.txt" || fail "serve failed"
if grep -q 'running,' "$dir/serve-err.txt"; then
    fail "serve drew its step line into a file: $(cat "$dir/serve-err.txt")"
fi
# On a terminal the bar is drawn (script gives the command a pseudo-terminal; its output is the terminal's).
if command -v script > /dev/null 2>&1; then
    script -qec "'$cli' run --tokens 4 > /dev/null" "$dir/typescript" > /dev/null 2>&1 || fail "run on a terminal failed"
    grep -q '\[#' "$dir/typescript" || fail "run drew no progress bar on a terminal: $(cat "$dir/typescript")"
    script -qec "'$cli' run --tokens 4 --no-progress > /dev/null" "$dir/quiet" > /dev/null 2>&1 || fail "run --no-progress failed"
    if grep -q '\[#' "$dir/quiet"; then fail "run --no-progress drew a bar on a terminal"; fi
fi
for command in "fidelity --help" "synthetic --help" "conform --help" "bench cache --help" "bench model --help" \
               "bench press --help" "train --help" "serve --help" "run --help"; do
    # shellcheck disable=SC2086
    "$cli" $command | grep -q -- '--no-progress' || fail "\`$command\` lists no --no-progress"
done
echo "progress lines: terminals only; --no-progress taken everywhere"
