#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Fails when a test executable holds a case that no file's ctest entry runs: its files' --gtest_filter
# patterns, negated, must select nothing (tests/CMakeLists.txt, kvscope_gtest_filter).
# Usage: every-case-runs.sh EXECUTABLE PATTERNS
set -eu
unmatched=$("$1" --gtest_list_tests "--gtest_filter=-$2")
if printf '%s\n' "$unmatched" | grep -q '^  '; then
    echo "$1: these cases belong to no ctest entry (a TEST(...) line the CMake filter did not read):" >&2
    printf '%s\n' "$unmatched" >&2
    exit 1
fi
echo "$1: every case belongs to a ctest entry"
