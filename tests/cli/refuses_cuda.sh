#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Every command with --device refuses cuda on a build without it: exit code 2 and a message naming what
# was asked, why it is unavailable and what is allowed. Usage: refuses_cuda.sh KVSCOPE_CLI FIXTURE_DIR
cli=$1
fixtures=$2
status=0
check() {
    what=$1
    shift
    output=$("$cli" "$@" 2>&1 >/dev/null)
    code=$?
    if [ "$code" -ne 2 ]; then
        echo "FAIL $what: exit code $code, expected 2"
        status=1
    fi
    case $output in
    *cuda*"is not available"*"allowed here: cpu"*) echo "ok $what: $output" ;;
    *) echo "FAIL $what: unclear message: $output"; status=1 ;;
    esac
}
check conform conform "$fixtures" --device cuda
check "bench cache" bench cache --type quantized --steps 1 --device cuda
check run run --preset llama --tokens 1 --device cuda --no-progress
exit $status
