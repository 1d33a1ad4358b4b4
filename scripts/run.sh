#!/usr/bin/env bash
# Set-up to running: installs what is missing, builds a release and starts kvscope on its built-in
# default. Until the inspector GUI lands this is the command line's default run: the engine checked
# against the reference's golden fixtures, then the cache benchmark for every cache kind.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
cmake --preset release
cmake --build --preset release --target kvscope-cli
cli=build/release/engine/cli/kvscope-cli
"$cli" conform tests/data/conformance
for type in dynamic dynamic_sliding static static_sliding quantized offloaded; do
    "$cli" bench cache --type "$type"
done
