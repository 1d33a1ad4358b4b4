#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs `python3 -m pytest tests/python -q` (in parallel where pytest-xdist is there) for ctest with the first python3 that has pytest, torch and
# zstandard (the one on PATH, else Debian's /usr/bin/python3, where python3-torch lives); exits 77,
# ctest's "skipped", where none has them, so such a machine skips cleanly instead of failing.
set -uo pipefail
# With pytest-xdist (Debian: python3-pytest-xdist) the tests run on every core: each one starts kvscope-cli
# and the reference in its own process, so two cores take half the time (147 s against 314 s measured).
for python in python3 /usr/bin/python3; do
    if "$python" -c "import pytest, torch, zstandard" 2>/dev/null; then
        parallel=()
        if "$python" -c "import xdist" 2>/dev/null; then
            parallel=(-p xdist -n auto)
        fi
        exec "$python" -m pytest tests/python -q "${parallel[@]}"
    fi
done
echo "python_recorder: no python3 with pytest, torch and zstandard (Debian: python3-pytest python3-torch" \
     "python3-zstandard python3-crc32c); skipped"
exit 77
