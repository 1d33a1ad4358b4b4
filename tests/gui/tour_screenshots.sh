#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Every guided tour renders: `kvscope --tour NAME --screenshot OUT` runs the tour's live session on the
# real engine to its end and writes a painted PNG (AppLauncher refuses blank ones).
# Usage: tour_screenshots.sh KVSCOPE
gui=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
names=$("$gui" --list-tours | python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(sys.stdin)))')
[ -n "$names" ] || { echo "FAIL kvscope --list-tours lists no tour"; exit 1; }
status=0
count=0
for name in $names; do
    if ! "$gui" --tour "$name" --screenshot "$out/$name.png" --size 1280x800 >"$out/$name.log" 2>&1; then
        echo "FAIL --tour $name:"; cat "$out/$name.log"; status=1
    elif [ ! -s "$out/$name.png" ]; then
        echo "FAIL --tour $name wrote no picture"; status=1
    fi
    count=$((count + 1))
done
[ $status -eq 0 ] && echo "ok: $count tours rendered"
exit $status
