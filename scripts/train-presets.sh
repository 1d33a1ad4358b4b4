#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Retrains the built-in presets' weights (resources/presets/<preset>.safetensors) on Debian's
# `fortunes` package with `kvscope-cli train`, one thread each, and records each one's held-out bits
# per byte (resources/presets/training/<preset>.json). Run from the repository root after a build:
#   scripts/train-presets.sh [PRESET...]        (default: every decoder-only preset)
# KVSCOPE_CLI names the kvscope-cli to use. Deterministic: the same build gives the same weights.
#
# llama trains from its seeded random weights. The others start warm (`train --init`) and keep training
# with their own shapes (windows, chunks, tied embeddings, shared KV, linear attention): mistral and
# llama4 have exactly llama's tensors and start from the trained llama; gemma2, gemma3, gemma3n and
# qwen3-next start from a short llama run (`base`, 300 steps), so that they can train while llama's
# longer run goes on (`--jobs N` runs N at once). Tensors of the same name and shape are copied, the
# rest keep their seeded values. whisper keeps its random weights: it needs audio features.
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
# The warm start of every preset but llama.
base() {
    if [ ! -f "$work/llama-base.safetensors" ]; then
        echo "== llama-base: 300 steps of 16 x 128 bytes" >&2
        "$cli" train --preset llama "${corpus[@]}" --steps 300 --batch 16 --sequence-length 128 --learning-rate 5e-3 \
            --warmup 20 --eval-every 100 --eval-windows 32 --no-progress --out "$work/llama-base.safetensors" >/dev/null
    fi
}
# Steps per preset (8 windows of 256 bytes each) and where it starts: a few minutes to half an hour
# of one CPU thread each.
declare -A steps=([llama]=900 [mistral]=60 [llama4]=300 [gemma2]=200 [gemma3]=200 [gemma3n]=150 [qwen3-next]=250)
declare -A start=([llama]="" [mistral]=resources/presets/llama.safetensors [llama4]=resources/presets/llama.safetensors
                  [gemma2]=$work/llama-base.safetensors [gemma3]=$work/llama-base.safetensors
                  [gemma3n]=$work/llama-base.safetensors [qwen3-next]=$work/llama-base.safetensors)
# Warm restarts after the first run (steps:peak learning rate:weight decay:warm-up steps, each from the run
# before): the
# runs that lifted llama and qwen3-next to the word bar. llama's last, with a heavier weight decay, is
# the longest.
declare -A more=([llama]="600:5e-3:0.1:30 1500:4e-3:0.5:30" [qwen3-next]="150:5e-3:0.1:20")
train() {
    local preset=$1
    local init=()
    if [ -n "${start[$preset]}" ]; then
        init=(--init "${start[$preset]}")
    fi
    local phases=("${steps[$preset]}:1e-2:0.1:30" ${more[$preset]:-})
    local records=()
    local phase=0
    for spec in "${phases[@]}"; do
        IFS=: read -r count rate decay warmup <<<"$spec"
        local out="$work/$preset-phase$phase.safetensors"
        if ((phase > 0)); then
            init=(--init "$work/$preset-phase$((phase - 1)).safetensors")
        fi
        echo "== $preset (run $((phase + 1)) of ${#phases[@]}): $count steps of 8 x 256 bytes, learning rate $rate" >&2
        "$cli" train --preset "$preset" "${corpus[@]}" "${init[@]}" --steps "$count" --batch 8 \
            --sequence-length 256 --learning-rate "$rate" --weight-decay "$decay" --warmup "$warmup" \
            --eval-every 150 --eval-windows 64 --dtype f16 --no-progress --out "$out" >"$work/$preset-phase$phase.json"
        records+=("$work/$preset-phase$phase.json")
        phase=$((phase + 1))
    done
    cp "$work/$preset-phase$((phase - 1)).safetensors" "resources/presets/$preset.safetensors"
    # The record: the last run's summary, the earlier runs under "earlier_runs".
    python3 - "resources/presets/$preset.safetensors" "${records[@]}" >"resources/presets/training/$preset.json" <<'PYTHON'
import json, sys
runs = [json.load(open(path)) for path in sys.argv[2:]]
record = dict(runs[-1], out=sys.argv[1])
if len(runs) > 1:
    record["earlier_runs"] = runs[:-1]
json.dump(record, sys.stdout, indent=2, sort_keys=True)
print()
PYTHON
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"{s['preset']}: {s['held_out_bits_per_byte_as_written']:.3f} bits/byte held out after {s['steps']} steps ({len(s.get('earlier_runs', [])) + 1} runs), {s['seconds']:.0f} s\")" \
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
base
# llama and the presets that start from base first, then those that start from the trained llama.
running=0
for phase in first second; do
    for preset in "${presets[@]}"; do
        [ "${start[$preset]}" = resources/presets/llama.safetensors ] && current=second || current=first
        [ "$current" = "$phase" ] || continue
        train "$preset" &
        running=$((running + 1))
        if ((running >= jobs)); then
            wait -n
            running=$((running - 1))
        fi
    done
    while ((running > 0)); do
        wait -n
        running=$((running - 1))
    done
done
