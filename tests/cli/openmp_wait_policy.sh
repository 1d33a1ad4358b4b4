#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# kvscope-cli's OpenMP threads sleep while they wait (config::OpenMpWaitPolicy): started without
# OMP_WAIT_POLICY, the program runs again with PASSIVE; a policy the user set is kept.
# Usage: openmp_wait_policy.sh KVSCOPE_CLI
cli="$1"
out=$(env -u OMP_WAIT_POLICY "$cli" bench gemm --m 8 --k 8 --n 8 --repeats 1 --threads 1) || exit 1
echo "$out"
echo "$out" | grep -q '"openmp_wait_policy":"PASSIVE"' || { echo "unset, the policy did not become PASSIVE"; exit 1; }
out=$(OMP_WAIT_POLICY=ACTIVE "$cli" bench gemm --m 8 --k 8 --n 8 --repeats 1 --threads 1) || exit 1
echo "$out" | grep -q '"openmp_wait_policy":"ACTIVE"' || { echo "the user's ACTIVE was not kept"; exit 1; }
