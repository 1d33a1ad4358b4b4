#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Renders the results gpu-check.sh collected as one markdown table (docs/gpu.md explains the columns).

Usage: gpu-table.py RESULTS_DIR DEVICE GPU_NAME ELAPSED_S TESTS(ON|OFF)
Exit status 1 when a check failed (a conformance failure, a failed --check, an error, a failed test).
"""
import json
import pathlib
import re
import sys

TYPES = ["dynamic", "dynamic_sliding", "static", "static_sliding", "quantized_hqq", "offloaded"]
TESTS = ["MinMaxMathTest", "MinMaxQuantizerTest", "DeviceSupportTest", "CacheDeviceTimelineTest",
         "ConformanceRunnerTest", "CacheBenchmarkTest"]


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return {"error": f"no result ({error.__class__.__name__})"}


def number(value, digits=2):
    return f"{value:.{digits}f}"


def main():
    results, device, gpu, elapsed, tests = pathlib.Path(sys.argv[1]), *sys.argv[2:6]
    rows = []
    failed = False

    code, milliseconds = (results / "conform.status").read_text().split()
    summary = (results / "conform.txt").read_text().strip().splitlines()
    conform_ok = code == "0"
    failed |= not conform_ok
    rows.append(["conform", "360 committed fixtures",
                 f"{summary[-1] if summary else 'no output'} in {int(milliseconds) / 1000:.1f} s",
                 "the reference's results (within 1e-6; quantized 1e-5)", "ok" if conform_ok else "FAIL"])

    for kind in TYPES:
        result = load(results / f"bench-{kind}.json")
        if "error" in result:
            failed = True
            rows.append(["bench cache", kind, "error", result["error"], "FAIL"])
            continue
        rows.append(["bench cache", kind, f"{number(result['us_per_update'])} µs/update",
                     f"{result['updates']} updates", "ok"])

    fused = load(results / "bench-quantized-fused.json")
    libtorch = load(results / "bench-quantized-libtorch.json")
    if "error" in fused or "error" in libtorch:
        failed = True
        rows.append(["bench cache", "quantized", "error", fused.get("error") or libtorch.get("error"), "FAIL"])
    else:
        speedup = libtorch["us_per_update"] / fused["us_per_update"] if fused["us_per_update"] else 0.0
        rows.append(["bench cache", "quantized (min-max), fused kernels", f"{number(fused['us_per_update'])} µs/update",
                     f"LibTorch path {number(libtorch['us_per_update'])} µs/update", f"{speedup:.2f}x"])

    offload = load(results / "bench-offloaded.json").get("offload")
    if offload:
        timing = offload["timing"]
        rows.append([f"offload ({timing})", "decode step, 8 layers", f"{number(offload['step_ms'], 3)} ms",
                     f"compute-only {number(offload['compute_only_step_ms'], 3)} ms + copy-only "
                     f"{number(offload['copy_only_step_ms'], 3)} ms",
                     f"prefetch hides {offload['hidden_fraction'] * 100:.0f}% of the copy time"])
        plain = offload["plain_copy_gbps"]
        ratio = offload["h2d_gbps"] / plain if plain else 0.0
        copy = "pinned host to device" if device == "cuda" else "host to host"
        rows.append([f"offload ({timing})", f"host-to-device prefetch, {offload['mean_prefetch_bytes'] / 1e6:.2f} MB",
                     f"{number(offload['h2d_gbps'])} GB/s", f"plain {copy} copy {number(plain)} GB/s",
                     f"{ratio:.2f}x"])

    for path in sorted(results.glob("run-*.json")):
        preset = path.stem[len("run-"):]
        result = load(path)
        if "error" in result:
            failed = True
            rows.append(["run --check", preset, "error", result["error"], "FAIL"])
            continue
        passed = result.get("check_passed", False)
        failed |= not passed
        rows.append(["run --check", preset, f"{result['tokens_per_second']:.0f} tokens/s",
                     f"max abs logit diff {result['max_abs_logit_diff']:.2g} (tolerance {result['check_tolerance']:.2g})",
                     "ok" if passed else "FAIL"])

    if tests == "ON":
        for test in TESTS:
            status = results / f"test-{test}.status"
            if not status.exists():
                continue
            output = (results / f"test-{test}.txt").read_text()
            found = re.search(r"\[  SKIPPED \] (\d+) tests?\.", output)
            skipped = int(found.group(1)) if found else 0
            ok = status.read_text().strip() == "0"
            failed |= not ok
            rows.append(["GoogleTest", test, "passed" if ok else "failed", f"{skipped} skipped" if skipped else "",
                         "ok" if ok else "FAIL"])
    else:
        rows.append(["GoogleTest", "not built", "GoogleTest or Google Benchmark missing", "", "-"])

    where = f"{gpu} (cuda)" if device == "cuda" else "CPU dry run (--device cpu)"
    print(f"kvscope gpu-check on {where}, {elapsed} s in all")
    print()
    print("| check | case | result | compared with | verdict |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
