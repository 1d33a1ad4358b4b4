#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Retrains the built-in presets' weights (resources/presets/<preset>.safetensors) on Debian's
# `fortunes` package with `kvscope-cli train`, one thread each, and records each one's held-out bits
# per byte (resources/presets/training/<preset>.json). Run from the repository root after a build:
#   scripts/train-presets.sh [PRESET...]        (default: every decoder-only preset)
# KVSCOPE_CLI names the kvscope-cli to use; STEPS_SCALE multiplies every preset's steps (0.1 for a
# quick try). Deterministic: the same commit gives the same weights.
set -euo pipefail
cli=${KVSCOPE_CLI:-build/dev/engine/cli/kvscope-cli}
scale=${STEPS_SCALE:-1}
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

# Steps, batch and window per preset: sized so that each trains in a few minutes of one CPU thread.
# Linear attention runs a per-token recurrence, so qwen3-next takes shorter windows.
declare -A settings=(
    [llama]="2000 16 128"
    [mistral]="2000 16 128"
    [gemma2]="2000 16 128"
    [gemma3]="2000 16 128"
    [gemma3n]="2000 16 128"
    [llama4]="2000 16 128"
    [qwen3-next]="1500 16 64"
)
presets=("$@")
if ((${#presets[@]} == 0)); then
    presets=(llama mistral gemma2 gemma3 gemma3n llama4 qwen3-next)
fi
for preset in "${presets[@]}"; do
    if [ -z "${settings[$preset]:-}" ]; then
        echo "kvscope: no training settings for preset \`$preset\` (trained: ${!settings[*]})" >&2
        exit 2
    fi
    read -r steps batch window <<<"${settings[$preset]}"
    steps=$(python3 -c "print(max(1, round($steps * $scale)))")
    echo "== $preset: $steps steps of $batch x $window bytes" >&2
    "$cli" train --preset "$preset" --corpus "$work/train.txt" --held-out "$work/held-out.txt" \
        --steps "$steps" --batch "$batch" --sequence-length "$window" --eval-every 250 --eval-windows 128 \
        --threads 1 --dtype f16 --out "resources/presets/$preset.safetensors" \
        >"resources/presets/training/$preset.json"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"{s['preset']}: {s['held_out_bits_per_byte_as_written']:.3f} bits/byte held out after {s['steps']} steps, {s['seconds']:.0f} s\")" \
        "resources/presets/training/$preset.json" >&2
done
