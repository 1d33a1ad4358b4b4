#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The GPU check of docs/gpu.md, in one call: builds the engine and the CLI only (no GUI; tests only where
# GoogleTest and Google Benchmark are installed) against PyTorch's LibTorch, then runs conformance, the
# cache benchmarks (fused kernels against the LibTorch path, offloading against compute-only and copy-only
# time, prefetch bandwidth against a plain pinned copy) and every preset with --check on the device, and
# prints one markdown table (also written to $OUT/gpu-table.md when OUT is set).
#
# Usage: scripts/gpu-check.sh [--device cuda|cpu] [--build-dir DIR] [--steps N] [--tokens N] [-- CMAKE_ARGS...]
#   --device cpu   a dry run on the CPU with the same steps and table (how the script is tested without a GPU)
#   --steps N      decode steps of each cache benchmark (default 512, the reference workload)
#   --tokens N     tokens generated per preset (default 16)
# Exit codes: 0 every check passed, 1 a check failed, 2 the device is unavailable or the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."

device=cuda
build=""
steps=512
tokens=16
cmake_extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --device) device=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --) shift; cmake_extra=("$@"); break ;;
    *) echo "gpu-check: unknown argument \`$1\` (allowed: --device cuda|cpu, --build-dir DIR, --steps N, --tokens N, -- CMAKE_ARGS)" >&2; exit 2 ;;
    esac
done
case $device in
cuda | cpu) ;;
*) echo "gpu-check: --device $device is not one of: cuda, cpu" >&2; exit 2 ;;
esac
build=${build:-build/gpu-check-$device}
started=$(date +%s)
log() { echo "gpu-check [$(($(date +%s) - started)) s]: $*" >&2; }

# A CUDA LibTorch's CMake files need nvcc (they enable CUDA); the toolkit's usual place may be off PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi
# PyTorch's Python package carries a LibTorch with CMake files; without it CMake finds the system's.
prefix=()
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
if [ -n "$torch_prefix" ]; then
    prefix=(-DCMAKE_PREFIX_PATH="$torch_prefix")
    log "LibTorch of PyTorch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) at $torch_prefix"
else
    log "no PyTorch Python package: building against the LibTorch CMake finds on the system"
fi

# A fresh build directory is a Release build; an existing one (--build-dir) keeps its generator and type.
setup=()
if [ ! -f "$build/CMakeCache.txt" ]; then
    setup=(-DCMAKE_BUILD_TYPE=Release)
    command -v ninja >/dev/null && setup+=(-G Ninja)
fi
configure() {
    cmake -S . -B "$build" "${setup[@]}" -DKVSCOPE_GUI=OFF -DKVSCOPE_TESTS="$1" "${prefix[@]}" "${cmake_extra[@]}" \
        >"$build.configure.log" 2>&1
}
mkdir -p "$(dirname "$build")"
# Tests need GoogleTest and Google Benchmark, which a GPU machine may lack: then the CLI alone.
tests=ON
if ! configure ON; then
    tests=OFF
    if ! configure OFF; then
        tail -30 "$build.configure.log" >&2
        log "configure failed (log: $build.configure.log)"
        exit 2
    fi
fi
log "configured (tests $tests): $(grep -h 'kvscope: CUDA kernels' "$build.configure.log" | sed 's/^-- //')"
targets=(kvscope-cli)
device_tests=(MinMaxMathTest MinMaxQuantizerTest DeviceSupportTest CacheDeviceTimelineTest ConformanceRunnerTest
    CacheBenchmarkTest)
[ "$tests" = ON ] && targets+=("${device_tests[@]}")
if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build.build.log" 2>&1; then
    grep -E "error|Error" "$build.build.log" | head -30 >&2
    log "build failed (log: $build.build.log)"
    exit 2
fi
log "built ${targets[*]}"
cli=$build/engine/cli/kvscope-cli

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
fixtures=tests/data/conformance

# 1. Conformance on the device; a device this build cannot use stops the check here.
conform_start=$(date +%s%N)
"$cli" conform --device "$device" "$fixtures" >"$results/conform.txt" 2>"$results/conform.err"
code=$?
if [ $code -eq 2 ]; then
    log "no CUDA: $(cat "$results/conform.err")"
    exit 2
fi
echo "$code $((($(date +%s%N) - conform_start) / 1000000))" >"$results/conform.status"
log "conform: $(tail -1 "$results/conform.txt")"

# 2. Cache benchmarks: every type on the reference workload; quantized with both implementations.
bench() {
    local name=$1
    shift
    if ! timeout 300 "$cli" bench cache --device "$device" --steps "$steps" "$@" >"$results/bench-$name.json" \
        2>"$results/bench-$name.err"; then
        echo "{\"error\": \"$(tail -1 "$results/bench-$name.err" | tr -d '"\\')\"}" >"$results/bench-$name.json"
    fi
    log "bench $name done"
}
for type in dynamic dynamic_sliding static static_sliding quantized_hqq offloaded; do
    bench "$type" --type "$type"
done
bench quantized-fused --type quantized --kernels fused
bench quantized-libtorch --type quantized --kernels libtorch

# 3. Every preset generates on the device and is checked against a cache-free recompute.
presets=$("$cli" presets | python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["presets"]))')
for preset in $presets; do
    if ! timeout 300 "$cli" run --preset "$preset" --device "$device" --tokens "$tokens" --check --no-progress \
        >"$results/run-$preset.json" 2>"$results/run-$preset.err"; then
        if ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$results/run-$preset.json" 2>/dev/null; then
            echo "{\"error\": \"$(tail -1 "$results/run-$preset.err" | tr -d '"\\')\"}" >"$results/run-$preset.json"
        fi
    fi
    log "run $preset done"
done

# 4. The GoogleTest binaries of the device paths (their CUDA cases skip without CUDA), where tests were built.
if [ "$tests" = ON ]; then
    for test in "${device_tests[@]}"; do
        binary=$(find "$build" -name "$test" -type f -perm -u+x | head -1)
        if timeout 300 "$binary" --gtest_brief=1 >"$results/test-$test.txt" 2>&1; then
            echo "0" >"$results/test-$test.status"
        else
            echo "1" >"$results/test-$test.status"
        fi
    done
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
elapsed=$(($(date +%s) - started))
python3 scripts/gpu-table.py "$results" "$device" "${gpu:-}" "$elapsed" "$tests" >"$results/table.md"
status=$?
cat "$results/table.md"
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    cp "$results/table.md" "$OUT/gpu-table.md"
    cp -r "$results" "$OUT/gpu-check-results"
fi
exit $status
