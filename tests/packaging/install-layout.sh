#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs this build into a scratch prefix (as the Debian package lays it out) and runs the installed
# programs from there: they must find their presets, workloads and version without the source tree.
# Usage: install-layout.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
source="$2"
prefix="$(mktemp -d)/usr"
trap 'rm -rf "$(dirname "$prefix")"' EXIT
fail() { echo "install-layout: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > /dev/null
libdir="$(cd "$prefix" && ls -d lib*/kvscope 2>/dev/null | head -1)"
for file in bin/kvscope-cli share/applications/io.github.kvscope.kvscope.desktop \
            share/metainfo/io.github.kvscope.kvscope.metainfo.xml share/mime/packages/kvscope-session.xml \
            share/icons/hicolor/scalable/apps/kvscope.svg share/icons/hicolor/64x64/apps/kvscope.png \
            share/kvscope/presets/llama.json share/kvscope/presets/llama.safetensors \
            share/kvscope/workloads/chat-shared-system-prompt.json share/kvscope/sessions/llama-dynamic.kvsess \
            share/kvscope/sessions/FORMAT.md share/doc/kvscope/copyright "$libdir/libkvscope_sentencepiece.so"; do
  [[ -f "$prefix/$file" ]] || fail "missing $file"
done
if grep -q '^KVSCOPE_GUI:BOOL=ON' "$build/CMakeCache.txt"; then
  [[ -f "$prefix/bin/kvscope" ]] || fail "missing bin/kvscope"
  "$prefix/bin/kvscope" --version | grep -Eq '^kvscope [0-9.]+ \(commit ' || fail "kvscope --version"
fi

cli="$prefix/bin/kvscope-cli"
"$cli" --version | grep -Eq '^kvscope-cli [0-9.]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$' || fail "kvscope-cli --version"
# The installed program reads the installed data, not the source tree's.
unset KVSCOPE_PRESETS KVSCOPE_WORKLOADS
directory="$("$cli" presets | python3 -c 'import json,sys; print(json.load(sys.stdin)["directory"])')"
[[ "$directory" == "$prefix/share/kvscope/presets" ]] || fail "presets read from $directory"
"$cli" run --preset llama --tokens 2 --no-progress > /dev/null || fail "kvscope-cli run --preset llama"
"$cli" serve --workload chat-shared-system-prompt > /dev/null 2>&1 || fail "kvscope-cli serve --workload"
"$cli" info "$prefix/share/kvscope/sessions/llama-dynamic.kvsess" > /dev/null || fail "kvscope-cli info"

# Desktop integration files as desktops and software centres check them.
if command -v desktop-file-validate > /dev/null; then
  desktop-file-validate "$prefix/share/applications/io.github.kvscope.kvscope.desktop" || fail "desktop entry"
fi
if command -v appstreamcli > /dev/null; then
  appstreamcli validate --no-net --pedantic "$prefix/share/metainfo/io.github.kvscope.kvscope.metainfo.xml" > /dev/null \
    || fail "metainfo"
fi
echo "install-layout: ok ($prefix)"
