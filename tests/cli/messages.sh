#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Bad command lines get exit code 2 and a message saying what is allowed, not a type's raw bounds.
# Usage: messages.sh KVSCOPE_CLI
cli=$1
status=0
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
expect() {
    what=$1
    pattern=$2
    shift 2
    output=$("$cli" "$@" 2>&1 >/dev/null)
    code=$?
    if [ "$code" -ne 2 ]; then
        echo "FAIL $what: exit code $code, expected 2 ($output)"
        status=1
    fi
    case $output in
    *$pattern*) echo "ok $what: $output" ;;
    *) echo "FAIL $what: expected '$pattern' in: $output"; status=1 ;;
    esac
    case $output in
    *179769313486*|*"not in range"*) echo "FAIL $what: a raw numeric bound: $output"; status=1 ;;
    esac
}
expect "run --tokens 0" "--tokens: must be a whole number at least 1, got \`0\`" run --tokens 0
expect "run --residual -1" "--residual: must be a whole number at least 1" run --residual -1
expect "run --temperature -1" "--temperature: must be a number at least 0" run --temperature -1
expect "run --cache paged" "unknown value \`paged\` (allowed: dynamic, static, quantized, offloaded, llamacpp)" run --cache paged
expect "run --backend int4" "(allowed: min-max, quanto (= min-max), hqq)" run --backend int4
expect "run --nbits 3" "nbits 3 is not supported by the min-max quantizer (allowed: 2, 4, 8)" \
    run --cache quantized --nbits 3 --no-progress
expect "run --tokenizer without one" "$empty/none" run --tokenizer "$empty/none" --no-progress
expect "run --tokenizer bytes-only folder" "$empty" run --tokenizer "$empty" --no-progress
expect "run --press snapkv on the default prompt" \
    "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or --press-option window_size=8" \
    run --press snapkv --ratio 0.5 --tokens 1 --no-progress
expect "run --press h2o --press-option recent_window beyond the budget" \
    "H2O's recent_window (32) is part of its budget (16) and must be at most that" \
    run --press h2o --press-option budget=16 --press-option recent_window=32 --tokens 1 --no-progress
expect "bench cache --layers 0" "--layers: must be a whole number at least 1" bench cache --layers 0
expect "bench cache --type paged" "dynamic_sliding" bench cache --type paged
expect "serve --free-policy lru" "(allowed: document, current)" serve --workload prefix-caching-example --free-policy lru
expect "serve --prefix-caching-hash-algo sha256" "(allowed: fnv1a, sha256_cbor)" serve --workload prefix-caching-example --prefix-caching-hash-algo sha256
expect "serve --block-size 0" "--block-size: must be a whole number at least 1" \
    serve --workload prefix-caching-example --block-size 0
expect "serve --cache quantized" "quantized caches are not paged" serve --workload prefix-caching-example --cache quantized
expect "serve --preset whisper" "is an encoder-decoder" serve --workload prefix-caching-example --preset whisper
expect "serve --workload nope" "built-in workloads are burst-preemption" serve --workload nope
expect "serve a pool too small" "raise --num-blocks" serve --workload prefix-caching-example --num-blocks 2 --block-size 4
expect "serve --compare-serving pool=3" "to change (allowed: block-size" serve --workload prefix-caching-example --compare-serving pool=3
expect "replay --step -1" "--step: must be a whole number at least 0" replay /dev/null --step -1
printf 'a corpus of a few bytes\nand another line of text\n' >"$empty/corpus.txt"
expect "train --preset gpt5" "unknown preset \`gpt5\` (allowed: gemma2" \
    train --preset gpt5 --corpus "$empty/corpus.txt" --out "$empty/w.safetensors" --no-progress
expect "train --preset whisper" "encoder-decoder" \
    train --preset whisper --corpus "$empty/corpus.txt" --out "$empty/w.safetensors" --no-progress
expect "train --steps 0" "--steps: must be a whole number at least 1" \
    train --preset llama --corpus "$empty/corpus.txt" --out "$empty/w.safetensors" --steps 0
expect "train --dtype f8" "f16" train --preset llama --corpus "$empty/corpus.txt" --out "$empty/w.safetensors" --dtype f8
expect "train --corpus missing" "--corpus" train --preset llama --corpus "$empty/none.txt" --out "$empty/w.safetensors"
expect "conform on an empty folder" "holds no *.json fixtures" conform "$empty"
expect "synthetic 4y100" "SIZE must be LAYERSxTOKENS with 1 to 9999 layers and at least one token, e.g. 32x131072; got \`4y100\`" \
    synthetic 4y100 --out "$empty/s.kvsess"
expect "synthetic into a folder that does not exist" "$empty/missing/s.kvsess" synthetic 4x10 --out "$empty/missing/s.kvsess"
exit $status
