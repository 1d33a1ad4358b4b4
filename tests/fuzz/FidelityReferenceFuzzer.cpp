// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: any bytes given to FidelityReference::parse (what `kvscope-cli fidelity --reference FILE`
// reads) must either be refused with a GenerationError or give a reference that PressFidelity may index
// without a check of its own: a prompt, one row of `vocab` log-probabilities per token, every token inside
// the vocabulary.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz FidelityReferenceFuzzer
// Run:   build/fuzz/tests/fuzz/FidelityReferenceFuzzer -max_len=4096 -rss_limit_mb=2048
// tests/fuzz/fidelity-reference-seeds
#include "kvscope/runtime/FidelityReference.h"
#include "kvscope/runtime/GenerationError.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using kvscope::runtime::FidelityReference;
    try {
        const FidelityReference reference = FidelityReference::parse({data, size}, "fuzz");
        if (reference.prompt.empty() || reference.tokens.empty() || reference.vocab < 1 ||
            reference.logProbabilities.size() / static_cast<std::size_t>(reference.vocab) !=
                reference.tokens.size() ||
            reference.logProbabilities.size() % static_cast<std::size_t>(reference.vocab) != 0) {
            std::abort();
        }
        double sum = 0.0;
        for (std::size_t token = 0; token < reference.tokens.size(); ++token) {
            if (reference.tokens[token] < 0 || reference.tokens[token] >= reference.vocab) {
                std::abort();
            }
            sum += reference.row(
                token)[static_cast<std::size_t>(reference.tokens[token])]; // in bounds under ASan
        }
        (void)sum;
    } catch (const kvscope::runtime::GenerationError&) {
    }
    return 0;
}
