#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the Debian package: kvscope_<version>_amd64.deb in the repository root, with /usr/bin/kvscope
# and kvscope-cli, the desktop entry, icon and AppStream metainfo, man pages written from the
# programs' --help, the presets, workloads and sample sessions under /usr/share/kvscope, and Depends
# computed from the binaries by dpkg-shlibdeps. Install it with `sudo apt install ./kvscope_*.deb`.
# Usage: scripts/package.sh [preset]   (package by default: a release build without the tests)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-package}"
scripts/install-dependencies.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
cmake --build --preset "$preset" --target man_pages
build="build/$preset"
# Reproducible man page dates: the date of the commit packaged.
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
export SOURCE_DATE_EPOCH
(cd "$build" && cpack -G DEB > cpack.log) || { cat "$build/cpack.log" >&2; exit 1; }
package="$(ls -t "$build"/kvscope_*_*.deb | head -1)"
cp "$package" .
echo "scripts/package.sh: wrote $(basename "$package")"
dpkg-deb --field "$(basename "$package")" Package Version Architecture Depends Recommends
