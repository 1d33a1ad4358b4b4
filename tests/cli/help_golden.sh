#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# kvscope-cli's help texts, byte for byte, against the golden files in tests/data/goldens/cli/ (the path the
# executable was started by is written kvscope-cli). KVSCOPE_UPDATE_GOLDENS=1 writes them instead.
# Usage: help_golden.sh KVSCOPE_CLI GOLDEN_DIR
cli=$1
dir=$2
status=0
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
for command in "" run serve attach fidelity synthetic info replay export presets presses tokenize detokenize train \
    conform bench "bench cache" "bench press" "bench model" "bench gemm" "bench timeline"; do
    name=kvscope-cli${command:+-$(echo "$command" | tr ' ' '-')}-help.txt
    # shellcheck disable=SC2086 # the command's words are separate arguments
    "$cli" $command --help 2>&1 | sed "s|$cli|kvscope-cli|g" >"$actual"
    if [ "${KVSCOPE_UPDATE_GOLDENS:-}" = 1 ]; then
        mkdir -p "$dir"
        cp "$actual" "$dir/$name"
        echo "wrote $dir/$name"
    elif ! diff -u "$dir/$name" "$actual"; then
        echo "FAIL kvscope-cli $command --help differs from $dir/$name"
        status=1
    fi
done
[ $status -eq 0 ] && echo "ok: every help text as its golden file"
exit $status
