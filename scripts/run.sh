#!/usr/bin/env bash
# Set-up to running: installs what is missing, builds a release and starts kvscope on its built-in
# default. Until the inspector GUI lands this is the command line's default run: the default preset
# generating token by token through a dynamic cache, progress on stderr, JSON summary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
cmake --preset release
cmake --build --preset release --target kvscope-cli
exec build/release/engine/cli/kvscope-cli run "$@"
