#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# `bench gemm` names the BLAS it ran on: Debian's reference BLAS, forced into kvscope-cli with
# LD_LIBRARY_PATH, is reported as "reference" from its own path; exit 77 (skipped) where libblas3 is absent.
# Usage: blas_reference.sh KVSCOPE_CLI
cli="$1"
reference=/usr/lib/x86_64-linux-gnu/blas
[ -e "$reference/libblas.so.3" ] || { echo "no reference BLAS at $reference: skipped"; exit 77; }
out=$(LD_LIBRARY_PATH="$reference" "$cli" bench gemm --m 64 --k 64 --n 64 --repeats 1 --threads 1) || exit 1
echo "$out"
echo "$out" | grep -q '"implementation":"reference"' || { echo "the reference BLAS is not named"; exit 1; }
echo "$out" | grep -q "\"path\":\"$reference/libblas.so.3" || { echo "its path is not named"; exit 1; }
echo "$out" | grep -q '"threads":1' || { echo "--threads 1 is not reported"; exit 1; }
