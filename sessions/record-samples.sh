#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Re-records the sample sessions from the built-in presets (run from the repository root after a
# build), with their trained weights (resources/presets/<preset>.safetensors; whisper's are random), so
# that the sessions' tokens read as words. Same prompt everywhere, so any two can be compared in the
# inspector's compare mode; the two llama sessions are the classic pair: full precision against a
# 2-bit quantized cache.
set -euo pipefail
cli=${1:-build/dev/engine/cli/kvscope-cli}
prompt="The key-value cache keeps what attention has already seen"
record() {
    local name=$1
    shift
    "$cli" run --prompt "$prompt" --tokens 40 --no-progress --out "sessions/$name.kvsess" "$@" >/dev/null
    echo "sessions/$name.kvsess: $(stat -c %s "sessions/$name.kvsess") bytes" >&2
}
record llama-dynamic --preset llama --cache dynamic
record llama-quantized-2bit --preset llama --cache quantized --nbits 2 --residual 16
record gemma2-static-sliding --preset gemma2 --cache static
record gemma3-sliding --preset gemma3 --cache dynamic
record mistral-offloaded --preset mistral --cache offloaded
record llama4-chunked --preset llama4 --cache dynamic
record qwen3-next-hybrid --preset qwen3-next --cache dynamic
record whisper-encoder-decoder --preset whisper --cache quantized --backend hqq --nbits 4 --residual 16
# AdaKV: per-head budgets, masked slots (the inspector's heads view shows them).
record llama-adakv --preset llama --cache dynamic --press adakv --ratio 0.5 --press-option base=snapkv \
  --press-option window_size=8
