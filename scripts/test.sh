#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set-up to green: installs what is missing, configures, builds and runs the whole suite with ctest.
# Usage: scripts/test.sh [preset]   (dev by default; asan runs the suite under Address/UB sanitizers)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
scripts/install-dependencies.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset"
