#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# The peers' environment is made again when the flags its llama.cpp is compiled with change: the stamp
# (scripts/peers-env.sh --stamp) follows them, and the environment in use carries the portable flags' stamp.
set -eu
cd "$(dirname "$0")/../.."
venv="${KVSCOPE_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/peers}"
portable=$(env -u KVSCOPE_PEERS_LLAMA_CMAKE_ARGS scripts/peers-env.sh --stamp)
again=$(env -u KVSCOPE_PEERS_LLAMA_CMAKE_ARGS scripts/peers-env.sh --stamp)
native=$(KVSCOPE_PEERS_LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON" scripts/peers-env.sh --stamp)
avx512=$(KVSCOPE_PEERS_LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=ON" scripts/peers-env.sh --stamp)
echo "stamps: portable $portable, native $native, avx512 $avx512"
[ "$portable" = "$again" ] || { echo "the stamp is not stable: $portable, then $again" >&2; exit 1; }
[ "$portable" != "$native" ] || { echo "-DGGML_NATIVE=ON gives the portable build's stamp" >&2; exit 1; }
[ "$portable" != "$avx512" ] || { echo "-DGGML_AVX512=ON gives the portable build's stamp" >&2; exit 1; }
[ "$native" != "$avx512" ] || { echo "two different flag sets give one stamp" >&2; exit 1; }
in_use=$(cat "$venv/.kvscope-stamp" 2>/dev/null || echo none)
[ "$in_use" = "$portable" ] || {
    echo "the peers' environment at $venv carries stamp $in_use, not the portable build's $portable:" \
         "make it again with scripts/peers-env.sh" >&2
    exit 1
}
