// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/runtime/CachePressHook.h"
#include "kvscope/runtime/FidelityReference.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::model {
class LanguageModel;
}

namespace kvscope::runtime {

/// How far a press moved a model's next-token distributions along one generation.
struct FidelityResult {
    /// The uncompressed run's greedy tokens, which the pressed model was fed too.
    std::vector<int64_t> tokens;
    /// Per generated token: KL(uncompressed || pressed) of the distributions that predicted it (nats),
    /// and whether both put it first.
    std::vector<double> divergences;
    std::vector<bool> topAgrees;
    double meanDivergence = 0.0;
    /// Share of the tokens whose top-1 agree.
    double topAgreement = 1.0;
    /// The first token (0-based) whose top-1 differ, -1 if none.
    int64_t firstDisagreement = -1;
    /// The press's compressions and what it left alone (see CachePressHook).
    std::vector<PressDecision> decisions;
    std::vector<std::string> notices;
};

/// The press fidelity measurement of docs/presses.md: the uncompressed model generates `tokens` greedy
/// tokens after the prompt; the same model with the press then reads the same prompt and is fed the same
/// tokens (teacher forcing), so both distributions of every step condition on one text. The uncompressed
/// run is a FidelityReference of its own, so that one serves every press measured on the same text.
class PressFidelity {
public:
    /// Refuses what CachePressHook refuses (unknown presses and options, caches a press cannot shrink),
    /// before it computes anything.
    static FidelityResult measure(model::LanguageModel& model, const config::CacheSettings& cache,
                                  const std::vector<int64_t>& prompt, int64_t tokens, const config::PressSettings& press);
    /// The same against a reference made by reference() with this model and cache (the caller checks that:
    /// FidelityReference::checkMadeFor); bit for bit the result of measure() above.
    static FidelityResult measure(model::LanguageModel& model, const config::CacheSettings& cache,
                                  const FidelityReference& reference, const config::PressSettings& press);
    /// The uncompressed model's greedy run: `tokens` tokens after the prompt and the log-probabilities that
    /// chose them (the reference's origin is left for the caller to fill).
    static FidelityReference reference(model::LanguageModel& model, const config::CacheSettings& cache,
                                       const std::vector<int64_t>& prompt, int64_t tokens);
    /// Throws what measure() would throw for this press and cache, without computing anything.
    static void check(const model::LanguageModel& model, const config::CacheSettings& cache,
                      const config::PressSettings& press);
    /// A digest (16 hex digits) of the model's parameters: their names, dtypes, shapes and bytes.
    static std::string weightsDigest(const model::LanguageModel& model);
};

} // namespace kvscope::runtime
