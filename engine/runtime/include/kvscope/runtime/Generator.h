// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/TextCodec.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::trace {
class EventSink;
struct LogitsEvent;
} // namespace kvscope::trace

namespace kvscope::model {
class LanguageModel;
class ModelCache;
} // namespace kvscope::model

namespace kvscope::runtime {

/// How tokens are picked.
struct GenerationOptions {
    int64_t maxNewTokens = 32;
    int64_t beams = 1;        ///< > 1: beam search (deterministic; temperature must be 0)
    uint64_t seed = 0;        ///< sampling generator seed
    double temperature = 0.0; ///< 0 = greedy
    int64_t topK = 0;         ///< sample among the k most likely tokens; 0 = all
    bool stopAtEos = true;
    int64_t eosTokenId = 257; ///< the byte tokenizer's eos
    int64_t padTokenId = 258; ///< what finished beams continue with
    /// > 0: prompt-lookup decoding (Transformers' `prompt_lookup_num_tokens`): each step drafts up to this many
    /// tokens from an earlier occurrence of the text's last n-gram, verifies them in one forward pass and crops
    /// the rejected ones (Cache::cropTokens after activatePastRecording). Greedy, one sequence, croppable caches.
    int64_t promptLookupNumTokens = 0;
    int64_t maxMatchingNgramSize = 2; ///< the longest n-gram looked up (Transformers' default)
    /// Non-null: assisted decoding (Transformers' `assistant_model`): this model, which must share the model's
    /// vocabulary and outlive the generator, drafts numAssistantTokens tokens greedily each step on a cache of its
    /// own; the model verifies them as prompt lookup's drafts, and both caches drop the rejected ones.
    model::LanguageModel* assistant = nullptr;
    int64_t numAssistantTokens = 5; ///< always this many (Transformers' "constant" schedule), within the budget

    /// The decoding a run's settings ask for (tokens, beams, seed, temperature, top-k), stopping at the
    /// text's eos unless the settings ignore it.
    static GenerationOptions of(const config::RunSettings& settings, const TextCodec& text);
};

/// What one prefill or step did.
struct StepResult {
    int64_t step = 0;                 ///< 0 = prefill
    std::vector<int64_t> inputTokens; ///< per row, the token fed (prefill: the prompt's last)
    std::vector<int64_t> tokens;      ///< per row (beam), the token picked
    double seconds = 0.0;             ///< forward pass and pick
    bool finished = false;
    /// Prompt lookup: the drafted tokens, how many of them the model accepted, and every token the step added
    /// (the accepted drafts and the model's own next token; `tokens` holds the last of them).
    std::vector<int64_t> drafted;
    int64_t acceptedDrafts = 0;
    std::vector<int64_t> added;
};

/// One verification of prompt-lookup decoding, as the summary and the peer test compare it.
struct SpeculativeStep {
    int64_t step = 0;
    int64_t drafted = 0;   ///< candidate tokens written into every layer
    int64_t accepted = 0;  ///< of them, kept (the rest cropped)
    int64_t added = 0;     ///< tokens the step added to the text (accepted + the model's next, within budget)
    int64_t cacheLength = 0; ///< the cache's length (layer 0) after the crop
};

/// Drives a model token by token over a cache: prefill, then one token per step(), greedy, seeded
/// temperature/top-k sampling or beam search (Cache::reorder, batchRepeatInterleave), and rewind
/// (Cache::crop). With an event sink, the self-attention cache reports every operation and the
/// generator brackets each step with StepBegin/StepEnd.
class Generator {
public:
    /// `model` and `sink` must outlive the generator. Refuses bad options, naming the allowed values.
    /// `text` names the tokens in the trace (null: the byte tokenizer); it must outlive the generator too.
    Generator(model::LanguageModel& model, config::CacheSettings cacheSettings, GenerationOptions options,
              trace::EventSink* sink = nullptr, const TextCodec* text = nullptr);
    ~Generator();
    Generator(const Generator&) = delete;
    Generator& operator=(const Generator&) = delete;

    /// Starts a generation: builds a fresh cache, runs the prompt (step 0) and picks the first token.
    const StepResult& prefill(const std::vector<int64_t>& promptIds);
    /// Feeds the last picked token(s) and picks the next; refuses once finished().
    const StepResult& step();
    /// Forgets the last `tokens` generated tokens (cropping the cache); the next step() continues
    /// from the token before them. Refuses where the cache cannot crop exactly, and with beams.
    void rewind(int64_t tokens);

    bool started() const { return m_cache != nullptr; }
    /// maxNewTokens picked, or every row ended with eos (when stopAtEos).
    bool finished() const;
    int64_t generatedCount() const { return m_generated; }
    int64_t stepIndex() const { return m_step; }
    int64_t rows() const;
    /// Generated tokens of the best row (beam 0), cut after eos.
    std::vector<int64_t> generatedTokens() const;
    /// Prompt plus generated tokens of one row.
    std::vector<int64_t> sequence(int64_t row = 0) const;
    /// Max |logits of the last forward pass - logits of recomputing the fed sequences from scratch
    /// without a cache|.
    double recomputeDifference();
    /// Cumulative beam log-probabilities (beam search only).
    std::vector<double> beamScores() const;

    model::ModelCache& cache();
    const model::ModelCache& cache() const;
    /// A row's next-token log-probabilities, whole or top-k (see trace::LogitsEvent); serving shares it.
    static trace::LogitsEvent logitsEventOf(const at::Tensor& rowLogits);
    const model::LanguageModel& model() const { return m_model; }
    const GenerationOptions& options() const { return m_options; }
    const config::CacheSettings& cacheSettings() const { return m_cacheSettings; }
    /// Whether each step drafts and verifies (prompt lookup or an assistant model).
    bool speculative() const { return m_options.promptLookupNumTokens > 0 || m_options.assistant != nullptr; }
    /// Every verification so far (speculative decoding only; step 0 is the prefill's).
    const std::vector<SpeculativeStep>& speculativeSteps() const { return m_speculative; }

private:
    /// Runs inputs through the model over the cache; returns the last position's logits [rows, vocab].
    at::Tensor runForward(const at::Tensor& inputIds);
    int64_t sample(const at::Tensor& logits);
    void pickGreedyOrSampled(const at::Tensor& logits);
    void pickBeams(const at::Tensor& logits, bool first);
    /// Prompt lookup: the draft for the current text (Transformers' PromptLookupCandidateGenerator), possibly empty.
    std::vector<int64_t> lookupCandidates() const;
    /// Assisted decoding: the assistant's greedy draft for the current text (Transformers' AssistedCandidateGenerator
    /// with a constant schedule and no confidence threshold), possibly empty.
    std::vector<int64_t> assistantCandidates();
    /// Prompt lookup: runs `fed` (tokens not yet cached) and the draft, keeps the accepted prefix and crops the rest.
    void verifyDraft(const std::vector<int64_t>& fed);
    /// Every self-attention layer's seq_length, for a speculation event.
    std::vector<int64_t> layerLengths() const;
    void beginStep(int64_t tokenId, const std::string& text);
    void endStep(std::chrono::steady_clock::time_point start);

    model::LanguageModel& m_model;
    config::CacheSettings m_cacheSettings;
    GenerationOptions m_options;
    trace::EventSink* m_sink;
    const TextCodec& m_text;
    std::unique_ptr<model::ModelCache> m_cache;
    std::unique_ptr<model::ModelCache> m_assistantCache; ///< assisted decoding: the assistant's own, untraced
    at::Generator m_rng;
    at::Tensor m_sequences;  ///< [rows, prompt + generated], int64 on CPU
    at::Tensor m_lastFed;    ///< the sequences as of the last forward pass (for recomputeDifference)
    at::Tensor m_lastLogits;
    std::vector<SpeculativeStep> m_speculative;
    at::Tensor m_beamScores; ///< [rows] float64
    std::vector<bool> m_rowFinished;
    int64_t m_promptLength = 0;
    int64_t m_generated = 0;
    int64_t m_step = 0;
    StepResult m_result;
};

} // namespace kvscope::runtime
