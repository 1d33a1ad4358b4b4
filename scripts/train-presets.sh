#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Retrains the built-in presets' weights (resources/presets/<preset>.safetensors) on Debian's
# `fortunes` package with `kvscope-cli train`, one thread each, and records each one's held-out bits
# per byte (resources/presets/training/<preset>.json). Run from the repository root after a build:
#   scripts/train-presets.sh [PRESET...]        (default: every decoder-only preset)
# KVSCOPE_CLI names the kvscope-cli to use. Deterministic: the same build gives the same weights.
#
# llama trains from its seeded random weights; every other preset starts from the trained llama (`train
# --init`: tensors of the same name and shape are copied, the rest keep their seeded values) and keeps
# training with its own shapes (windows, chunks, soft caps, shared KV, linear attention). mistral has exactly
# llama's tensors and needs least; llama4 (chunks of 32 tokens) learns best at a lower rate. `--jobs N`
# trains N of them at once once llama is done. whisper keeps its random weights: it needs audio features.
set -euo pipefail
cli=${KVSCOPE_CLI:-build/dev/engine/cli/kvscope-cli}
jobs=1
if [ "${1:-}" = "--jobs" ]; then
    jobs=$2
    shift 2
fi
work=${KVSCOPE_TRAIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/train}
fortunes=/usr/share/games/fortunes
if [ ! -d "$fortunes" ]; then
    echo "kvscope: installing Debian's fortunes package (the training corpus)" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends fortunes
fi
mkdir -p "$work" resources/presets/training
python3 scripts/fortunes-corpus.py --fortunes "$fortunes" --train "$work/train.txt" --held-out "$work/held-out.txt" >&2

corpus=(--corpus "$work/train.txt" --held-out "$work/held-out.txt" --threads 1)
# Steps (8 windows of 256 bytes each) and peak learning rate per preset: about 5 steps a second on one
# thread with an optimised BLAS (gemma3n's and qwen3-next's are slower), so 5 to 80 minutes each.
declare -A steps=([llama]=6000 [mistral]=1500 [llama4]=6000 [gemma2]=4000 [gemma3]=4000 [gemma3n]=4000 [qwen3-next]=4000)
declare -A rate=([llama]=1e-2 [mistral]=5e-3 [llama4]=3e-3 [gemma2]=1e-2 [gemma3]=1e-2 [gemma3n]=1e-2 [qwen3-next]=1e-2)
train() {
    local preset=$1
    local init=()
    if [ "$preset" != llama ]; then
        init=(--init resources/presets/llama.safetensors)
    fi
    echo "== $preset: ${steps[$preset]} steps of 8 x 256 bytes, learning rate ${rate[$preset]}" >&2
    "$cli" train --preset "$preset" "${corpus[@]}" "${init[@]}" --steps "${steps[$preset]}" --batch 8 \
        --sequence-length 256 --learning-rate "${rate[$preset]}" --weight-decay 0.1 --warmup 100 \
        --eval-every 500 --eval-windows 64 --dtype f16 --no-progress --out "$work/$preset.safetensors" \
        >"$work/$preset.json"
    cp "$work/$preset.safetensors" "resources/presets/$preset.safetensors"
    python3 - "resources/presets/$preset.safetensors" "$work/$preset.json" >"resources/presets/training/$preset.json" <<'PYTHON'
import json, sys
record = dict(json.load(open(sys.argv[2])), out=sys.argv[1])
json.dump(record, sys.stdout, indent=2, sort_keys=True)
print()
PYTHON
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"{s['preset']}: {s['held_out_bits_per_byte_as_written']:.3f} bits/byte held out after {s['steps']} steps, {s['seconds']:.0f} s\")" \
        "resources/presets/training/$preset.json" >&2
}

presets=("$@")
if ((${#presets[@]} == 0)); then
    presets=(llama mistral llama4 gemma2 gemma3 gemma3n qwen3-next)
fi
for preset in "${presets[@]}"; do
    if [ -z "${steps[$preset]:-}" ]; then
        echo "kvscope: no training settings for preset \`$preset\` (trained: ${!steps[*]})" >&2
        exit 2
    fi
done
# llama first: the others start from it.
for preset in "${presets[@]}"; do
    if [ "$preset" = llama ]; then
        train llama
    fi
done
running=0
for preset in "${presets[@]}"; do
    [ "$preset" = llama ] && continue
    train "$preset" &
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n
        running=$((running - 1))
    fi
done
wait
