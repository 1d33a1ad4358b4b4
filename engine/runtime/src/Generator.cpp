// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/Generator.h"

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/trace/Event.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvscope::runtime {
namespace {

const TextCodec& bytesUnlessGiven(const TextCodec* text) {
    static const ByteTextCodec bytes;
    return text != nullptr ? *text : bytes;
}

} // namespace

GenerationOptions GenerationOptions::of(const config::RunSettings& settings, const TextCodec& text) {
    GenerationOptions options;
    const std::optional<std::int64_t> eos = text.eosId();
    options.stopAtEos = eos.has_value() && !settings.ignoreEos;
    options.eosTokenId = eos.value_or(-1);
    options.padTokenId = text.padId();
    options.maxNewTokens = settings.tokens;
    options.beams = settings.beams;
    options.seed = settings.seed;
    options.temperature = settings.temperature;
    options.topK = settings.topK;
    options.promptLookupNumTokens = settings.promptLookupNumTokens;
    options.numAssistantTokens = settings.numAssistantTokens;
    return options;
}

Generator::Generator(model::LanguageModel& model, config::CacheSettings cacheSettings, GenerationOptions options,
                     trace::EventSink* sink, const TextCodec* text)
    : m_model(model), m_cacheSettings(cacheSettings), m_options(options), m_sink(sink),
      m_text(bytesUnlessGiven(text)),
      m_rng(at::make_generator<at::CPUGeneratorImpl>(options.seed)) {
    if (m_options.maxNewTokens < 1) {
        throw GenerationError("the number of new tokens must be >= 1, got " + std::to_string(m_options.maxNewTokens));
    }
    if (m_options.beams < 1) {
        throw GenerationError("beams must be >= 1, got " + std::to_string(m_options.beams));
    }
    if (m_options.beams > m_model.architecture().vocabSize()) {
        throw GenerationError("beams (" + std::to_string(m_options.beams) + ") cannot exceed the vocabulary (" +
                              std::to_string(m_model.architecture().vocabSize()) + ")");
    }
    if (!(m_options.temperature >= 0.0) || !std::isfinite(m_options.temperature)) {
        throw GenerationError("temperature must be >= 0 (0 = greedy), got " + std::to_string(m_options.temperature));
    }
    if (m_options.topK < 0) {
        throw GenerationError("top-k must be >= 0 (0 = no limit), got " + std::to_string(m_options.topK));
    }
    if (m_options.beams > 1 && m_options.temperature > 0.0) {
        throw GenerationError("beam search is deterministic: use temperature 0 with beams > 1 (or beams 1 to sample)");
    }
    if (m_options.promptLookupNumTokens < 0 || m_options.maxMatchingNgramSize < 1) {
        throw GenerationError("prompt-lookup-num-tokens must be >= 0 (0 = off) and the n-gram size >= 1, got " +
                              std::to_string(m_options.promptLookupNumTokens) + " and " +
                              std::to_string(m_options.maxMatchingNgramSize));
    }
    if (speculative() && (m_options.beams > 1 || m_options.temperature > 0.0)) {
        throw GenerationError("speculative decoding verifies drafts greedily on one sequence, as Transformers' "
                              "assisted generate does: use beams 1 and temperature 0 with --prompt-lookup-num-tokens "
                              "or --assistant-model");
    }
    if (m_options.assistant != nullptr && m_options.numAssistantTokens < 1) {
        throw GenerationError("num-assistant-tokens must be >= 1, got " + std::to_string(m_options.numAssistantTokens));
    }
    if (m_options.assistant != nullptr &&
        m_options.assistant->architecture().vocabSize() != m_model.architecture().vocabSize()) {
        throw GenerationError("the assistant model's vocabulary (" +
                              std::to_string(m_options.assistant->architecture().vocabSize()) +
                              " ids) is not the model's (" + std::to_string(m_model.architecture().vocabSize()) +
                              "): assisted decoding needs two models that share one vocabulary");
    }
}

Generator::~Generator() {
    if (m_cache) {
        // The sink may die before the cache's last use elsewhere; never leave it attached. It may be gone
        // already (kvscope-cli run's sinks die before its session): detach the emitter first, so that
        // closing the step emits nothing into it.
        cache::Cache& cache = m_cache->selfAttention();
        cache.eventEmitter().setSink(nullptr);
        cache.setEventSink(nullptr);
    }
}

model::ModelCache& Generator::cache() {
    if (!m_cache) {
        throw GenerationError("the generator has no cache before prefill()");
    }
    return *m_cache;
}

const model::ModelCache& Generator::cache() const {
    if (!m_cache) {
        throw GenerationError("the generator has no cache before prefill()");
    }
    return *m_cache;
}

int64_t Generator::rows() const { return m_sequences.defined() ? m_sequences.size(0) : 0; }

bool Generator::finished() const {
    if (!started()) {
        return false;
    }
    if (m_generated >= m_options.maxNewTokens) {
        return true;
    }
    if (!m_options.stopAtEos) {
        return false;
    }
    for (bool done : m_rowFinished) {
        if (!done) {
            return false;
        }
    }
    return true;
}

void Generator::beginStep(int64_t tokenId, const std::string& text) {
    cache::Cache& self = m_cache->selfAttention();
    self.setStep(m_step);
    self.eventEmitter().emit(-1, trace::StepBeginEvent{tokenId, text});
}

trace::LogitsEvent Generator::logitsEventOf(const at::Tensor& rowLogits) {
    const at::Tensor logProbs = at::log_softmax(rowLogits.to(at::kFloat), -1).contiguous();
    const int64_t vocabulary = logProbs.numel();
    trace::LogitsEvent event;
    event.complete = vocabulary <= trace::kLogitsFullVocabularyLimit;
    if (event.complete) {
        const float* values = logProbs.data_ptr<float>();
        event.logProbs.assign(values, values + vocabulary);
        return event;
    }
    const auto [values, indices] = at::topk(logProbs, trace::kLogitsTopCount);
    const at::Tensor ids = indices.to(at::kLong).contiguous();
    const at::Tensor top = values.contiguous();
    event.logProbs.assign(top.data_ptr<float>(), top.data_ptr<float>() + top.numel());
    event.tokenIds.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    return event;
}

void Generator::endStep(std::chrono::steady_clock::time_point start) {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    m_result.seconds = std::chrono::duration<double>(elapsed).count();
    m_result.finished = finished();
    cache::Cache& self = m_cache->selfAttention();
    if (self.eventSink() != nullptr) {
        self.finishStep();
        if (m_lastLogits.defined()) {
            self.eventEmitter().emit(-1, logitsEventOf(m_lastLogits[0]));
        }
        const int64_t token = m_result.tokens.empty() ? -1 : m_result.tokens.front();
        // A speculative step adds several tokens: its speculation event names the accepted drafts, and the step's
        // end the model's own token after them, so that each position has one piece.
        self.eventEmitter().emit(
            -1, trace::StepEndEvent{token, m_text.decode({token}),
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()});
    }
}

at::Tensor Generator::runForward(const at::Tensor& inputIds) {
    // The last position's logits only: a long prompt's [tokens, vocabulary] logits would outweigh the model.
    return m_model.forwardLast(inputIds, m_cache.get()).select(1, 0).to(at::kCPU);
}

const StepResult& Generator::prefill(const std::vector<int64_t>& promptIds) {
    at::NoGradGuard noGrad;
    if (promptIds.empty()) {
        throw GenerationError("the prompt is empty: give at least one token");
    }
    if (m_cache) {
        m_cache->selfAttention().setEventSink(nullptr);
    }
    const int64_t promptLength = static_cast<int64_t>(promptIds.size());
    m_cache = CacheFactory::create(m_model, m_cacheSettings, promptLength + m_options.maxNewTokens);
    m_cache->selfAttention().setEventSink(m_sink);
    m_promptLength = promptLength;
    m_generated = 0;
    m_step = 0;
    m_result = StepResult{};
    m_rng = at::make_generator<at::CPUGeneratorImpl>(m_options.seed);

    const int64_t beams = m_options.beams;
    // Prefill once and repeat the cache where the cache can change its batch; otherwise prefill every
    // beam (static and linear-attention caches have no batch_repeat_interleave in the reference).
    const bool repeatAfter = beams > 1 && m_cache->batchResizeRefusal().empty();
    const int64_t prefillRows = repeatAfter ? 1 : beams;
    at::Tensor prompt = at::tensor(promptIds, at::kLong).unsqueeze(0);
    at::Tensor input = prompt.expand({prefillRows, promptLength}).contiguous();

    m_speculative.clear();
    if (speculative()) {
        cache::Cache& self = m_cache->selfAttention();
        for (size_t index = 0; index < self.size(); ++index) {
            if (dynamic_cast<const cache::StaticLayer*>(&self.layer(index)) != nullptr) {
                throw GenerationError("speculative decoding crops the rejected drafts, and a " +
                                      self.layer(index).typeName() +
                                      " cannot be cropped (Transformers refuses static caches for assisted generate "
                                      "too): use --cache dynamic, sliding or quantized");
            }
        }
        // As Transformers' assisted decoding: sliding and linear-attention layers keep what the drafts push out
        // of their window until the crop after each verification.
        self.activatePastRecording();
        m_assistantCache.reset();
        m_sequences = prompt;
        m_rowFinished.assign(1, false);
        m_result.step = 0;
        m_result.inputTokens = {promptIds.back()};
        const auto start = std::chrono::steady_clock::now();
        beginStep(-1, m_text.decode(promptIds));
        verifyDraft(promptIds);
        endStep(start);
        return m_result;
    }
    const auto start = std::chrono::steady_clock::now();
    beginStep(-1, m_text.decode(promptIds));
    at::Tensor logits = runForward(input);
    m_lastFed = input;
    m_lastLogits = logits;
    if (repeatAfter) {
        m_cache->batchRepeatInterleave(beams);
    }
    m_sequences = prompt.expand({beams, promptLength}).contiguous();
    m_rowFinished.assign(static_cast<size_t>(beams), false);
    m_result.step = 0;
    m_result.inputTokens.assign(static_cast<size_t>(beams), promptIds.back());
    if (beams > 1) {
        pickBeams(logits, /*first=*/true);
    } else {
        pickGreedyOrSampled(logits);
    }
    endStep(start);
    return m_result;
}

const StepResult& Generator::step() {
    at::NoGradGuard noGrad;
    if (!m_cache) {
        throw GenerationError("step() needs a prefill() first");
    }
    if (finished()) {
        throw GenerationError("generation is finished (" + std::to_string(m_generated) + " of " +
                              std::to_string(m_options.maxNewTokens) +
                              " new tokens, or every row ended with eos); rewind or prefill again");
    }
    ++m_step;
    at::Tensor input = m_sequences.narrow(1, m_sequences.size(1) - 1, 1).contiguous();
    if (speculative()) {
        const int64_t last = input.item<int64_t>();
        m_result = StepResult{};
        m_result.step = m_step;
        m_result.inputTokens = {last};
        const auto start = std::chrono::steady_clock::now();
        beginStep(last, m_text.decode({last}));
        verifyDraft({last});
        endStep(start);
        return m_result;
    }
    const auto start = std::chrono::steady_clock::now();
    // The fed tokens read straight from the CPU ids [rows, 1]: a decode step's fixed cost is per tensor op.
    const int64_t* fed = input.data_ptr<int64_t>();
    const int64_t fedToken = fed[0];
    beginStep(fedToken, m_text.decode({fedToken}));
    at::Tensor logits = runForward(input);
    m_lastFed = m_sequences;
    m_lastLogits = logits;
    m_result = StepResult{};
    m_result.step = m_step;
    m_result.inputTokens.assign(fed, fed + input.size(0));
    if (m_options.beams > 1) {
        pickBeams(logits, /*first=*/false);
    } else {
        pickGreedyOrSampled(logits);
    }
    endStep(start);
    return m_result;
}

std::vector<int64_t> Generator::lookupCandidates() const {
    const at::Tensor row = m_sequences[0].contiguous();
    const int64_t* ids = row.data_ptr<int64_t>();
    const int64_t length = row.numel();
    const int64_t maxLength = m_promptLength + m_options.maxNewTokens;
    // The model picks one token more than it verifies: no draft when only that one fits.
    if (maxLength == length + 1) {
        return {};
    }
    for (int64_t ngram = std::min(m_options.maxMatchingNgramSize, length - 1); ngram > 0; --ngram) {
        const int64_t* tail = ids + length - ngram;
        // The first (leftmost) earlier occurrence with a continuation, as Transformers searches.
        for (int64_t at = 0; at + ngram <= length; ++at) {
            if (!std::equal(tail, tail + ngram, ids + at)) {
                continue;
            }
            const int64_t begin = at + ngram;
            const int64_t end = std::min({begin + m_options.promptLookupNumTokens, length, maxLength});
            if (begin >= end) {
                continue;
            }
            std::vector<int64_t> draft(ids + begin, ids + end);
            if (m_options.stopAtEos) {
                // A draft stops before eos, so that an accepted eos ends the text.
                draft.erase(std::find(draft.begin(), draft.end(), m_options.eosTokenId), draft.end());
            }
            return draft;
        }
    }
    return {};
}

std::vector<int64_t> Generator::layerLengths() const {
    const cache::Cache& self = m_cache->selfAttention();
    std::vector<int64_t> lengths;
    lengths.reserve(self.size());
    for (size_t layer = 0; layer < self.size(); ++layer) {
        lengths.push_back(self.seqLength(static_cast<int64_t>(layer)));
    }
    return lengths;
}

std::vector<int64_t> Generator::assistantCandidates() {
    model::LanguageModel& assistant = *m_options.assistant;
    const int64_t length = m_sequences.size(1);
    const int64_t count = std::min(m_options.numAssistantTokens, m_promptLength + m_options.maxNewTokens - length - 1);
    if (count <= 0) {
        return {};
    }
    int64_t cached = 0;
    if (!m_assistantCache) {
        m_assistantCache = CacheFactory::create(assistant, config::CacheSettings{}, m_promptLength + m_options.maxNewTokens);
        // Its sliding layers keep what its drafts push out of their window, so that dropping its rejected drafts
        // can roll them back too.
        m_assistantCache->selfAttention().activatePastRecording();
    } else {
        // As Transformers' AssistedCandidateGenerator: the assistant's cache is cut back to the text less its last
        // two tokens (dropping its rejected drafts), which it reads again before drafting.
        cache::Cache& drafts = m_assistantCache->selfAttention();
        cached = std::min(drafts.seqLength(), length - 2);
        drafts.cropTokens(-(drafts.seqLength() - cached));
    }
    const at::Tensor row = m_sequences[0];
    at::Tensor input = row.narrow(0, cached, length - cached).unsqueeze(0).contiguous();
    std::vector<int64_t> draft;
    while (static_cast<int64_t>(draft.size()) < count) {
        const int64_t token =
            assistant.forwardLast(input, m_assistantCache.get()).select(1, 0)[0].argmax().item<int64_t>();
        draft.push_back(token);
        if (m_options.stopAtEos && token == m_options.eosTokenId) {
            break; // the assistant's generate stops at eos, which stays a draft
        }
        input = at::full({1, 1}, token, at::kLong);
    }
    return draft;
}

void Generator::verifyDraft(const std::vector<int64_t>& fed) {
    const std::vector<int64_t> draft = m_options.assistant != nullptr ? assistantCandidates() : lookupCandidates();
    const auto drafted = static_cast<int64_t>(draft.size());
    trace::SpeculationEvent speculation;
    cache::Cache& self = m_cache->selfAttention();
    const bool traced = self.eventSink() != nullptr;
    if (traced) {
        // The drafts continue the text: they go in right after every token the sequence holds.
        speculation.source =
            m_options.assistant != nullptr ? trace::DraftSource::AssistantModel : trace::DraftSource::PromptLookup;
        speculation.firstPosition = m_sequences.size(1);
        speculation.draftIds = draft;
        for (const int64_t id : draft) {
            speculation.draftText += m_text.decode({id});
            speculation.pieceEnds.push_back(static_cast<int64_t>(speculation.draftText.size()));
        }
        speculation.lengthsBefore = layerLengths();
    }
    if (fed.size() > 1) {
        // The prompt but its last token first (its logits unused): the cache then holds what Transformers' one
        // forward over prompt and draft leaves, and only the draft's logits are computed.
        m_model.forwardLast(at::tensor(std::vector<int64_t>(fed.begin(), fed.end() - 1), at::kLong).unsqueeze(0),
                            m_cache.get());
    }
    std::vector<int64_t> verified{fed.back()};
    verified.insert(verified.end(), draft.begin(), draft.end());
    const at::Tensor logits =
        m_model.forward(at::tensor(verified, at::kLong).unsqueeze(0), m_cache.get())[0].to(at::kCPU);
    const at::Tensor picked = logits.argmax(-1).contiguous();
    const int64_t* choice = picked.data_ptr<int64_t>();
    int64_t matches = 0;
    while (matches < drafted && choice[matches] == draft[static_cast<size_t>(matches)]) {
        ++matches;
    }
    // The accepted drafts and the model's own next token, within the budget of new tokens, up to eos.
    std::vector<int64_t> added(choice, choice + matches + 1);
    added.resize(static_cast<size_t>(std::min<int64_t>(matches + 1, m_options.maxNewTokens - m_generated)));
    if (m_options.stopAtEos) {
        const auto eos = std::find(added.begin(), added.end(), m_options.eosTokenId);
        if (eos != added.end()) {
            added.erase(eos + 1, added.end());
        }
    }
    const auto accepted = static_cast<int64_t>(added.size()) - 1;
    m_cache->selfAttention().cropTokens(-(drafted - accepted));

    const at::Tensor addedIds = at::tensor(added, at::kLong).unsqueeze(0);
    m_lastFed = at::cat({m_sequences, addedIds.narrow(1, 0, accepted)}, 1);
    m_lastLogits = logits.narrow(0, accepted, 1);
    m_sequences = at::cat({m_sequences, addedIds}, 1);
    m_generated += static_cast<int64_t>(added.size());
    m_rowFinished[0] = m_rowFinished[0] || added.back() == m_options.eosTokenId;
    m_result.tokens = {added.back()};
    m_result.drafted = draft;
    m_result.acceptedDrafts = accepted;
    m_result.added = added;
    m_speculative.push_back({m_step, drafted, accepted, static_cast<int64_t>(added.size()),
                             m_cache->selfAttention().seqLength()});
    if (traced) {
        speculation.accepted = accepted;
        speculation.lengthsAfter = layerLengths();
        self.eventEmitter().emit(-1, std::move(speculation));
    }
}

int64_t Generator::sample(const at::Tensor& logits) {
    if (m_options.temperature <= 0.0) {
        return logits.argmax().item<int64_t>();
    }
    at::Tensor scaled = logits.to(at::kDouble) / m_options.temperature;
    if (m_options.topK > 0 && m_options.topK < scaled.size(0)) {
        const double threshold = std::get<0>(scaled.topk(m_options.topK)).min().item<double>();
        scaled = scaled.masked_fill(scaled < threshold, -std::numeric_limits<double>::infinity());
    }
    at::Tensor probabilities = at::softmax(scaled, 0);
    return at::multinomial(probabilities, 1, false, m_rng).item<int64_t>();
}

void Generator::pickGreedyOrSampled(const at::Tensor& logits) {
    const int64_t token = sample(logits[0]);
    m_sequences = at::cat({m_sequences, at::full({1, 1}, token, at::kLong)}, 1);
    m_rowFinished[0] = m_rowFinished[0] || token == m_options.eosTokenId;
    m_result.tokens = {token};
    ++m_generated;
}

void Generator::pickBeams(const at::Tensor& logits, bool first) {
    const int64_t beams = m_options.beams;
    const int64_t vocab = logits.size(1);
    at::Tensor logProbabilities = at::log_softmax(logits.to(at::kDouble), -1);
    at::Tensor beamIndex;
    at::Tensor tokens;
    if (first) {
        // Every row holds the same prompt: expand row 0 only, so the beams start distinct.
        auto [scores, indices] = logProbabilities[0].topk(beams);
        m_beamScores = scores;
        tokens = indices;
        beamIndex = at::zeros({beams}, at::kLong);
    } else {
        for (int64_t row = 0; row < beams; ++row) {
            if (m_options.stopAtEos && m_rowFinished[static_cast<size_t>(row)]) {
                // A finished beam keeps its score and continues with padding only.
                logProbabilities[row].fill_(-std::numeric_limits<double>::infinity());
                logProbabilities[row][m_options.padTokenId].fill_(0.0);
            }
        }
        at::Tensor total = (m_beamScores.unsqueeze(1) + logProbabilities).view({-1});
        auto [scores, indices] = total.topk(beams);
        m_beamScores = scores;
        beamIndex = at::div(indices, vocab, "floor");
        tokens = indices.remainder(vocab);
    }
    std::vector<bool> finishedRows(static_cast<size_t>(beams));
    for (int64_t row = 0; row < beams; ++row) {
        const int64_t source = beamIndex[row].item<int64_t>();
        finishedRows[static_cast<size_t>(row)] =
            m_rowFinished[static_cast<size_t>(source)] || tokens[row].item<int64_t>() == m_options.eosTokenId;
    }
    m_rowFinished = finishedRows;
    m_sequences = at::cat({m_sequences.index_select(0, beamIndex), tokens.unsqueeze(1)}, 1);
    if (!first && !beamIndex.equal(at::arange(beams, at::kLong))) {
        // The cache holds the beams as they were fed; line its rows up with the surviving beams.
        m_cache->reorder(beamIndex.to(m_model.device()));
    }
    m_result.tokens.assign(tokens.data_ptr<int64_t>(), tokens.data_ptr<int64_t>() + beams);
    ++m_generated;
}

void Generator::rewind(int64_t tokens) {
    if (!m_cache) {
        throw GenerationError("rewind needs a prefill() first");
    }
    if (m_options.beams > 1) {
        throw GenerationError("rewind works on single-sequence generation; beam scores cannot be rewound (use beams 1)");
    }
    if (tokens < 0 || tokens > m_generated) {
        throw GenerationError("can rewind between 0 and " + std::to_string(m_generated) +
                              " generated tokens, asked for " + std::to_string(tokens));
    }
    if (tokens == 0) {
        return;
    }
    const int64_t length = m_sequences.size(1) - tokens;
    // The cache holds every token but the last picked one, which the next step feeds.
    m_cache->crop(length - 1);
    m_sequences = m_sequences.narrow(1, 0, length).contiguous();
    m_generated -= tokens;
    const int64_t last = m_sequences[0][length - 1].item<int64_t>();
    m_rowFinished.assign(1, m_generated > 0 && last == m_options.eosTokenId);
    m_lastLogits = at::Tensor();
    m_lastFed = at::Tensor();
}

double Generator::recomputeDifference() {
    at::NoGradGuard noGrad;
    if (!m_lastFed.defined() || !m_lastLogits.defined()) {
        throw GenerationError("nothing to compare: run prefill() or step() first");
    }
    at::Tensor recomputed = m_model.forwardLast(m_lastFed, nullptr).select(1, 0).to(at::kCPU);
    return (recomputed - m_lastLogits).abs().max().item<double>();
}

std::vector<int64_t> Generator::sequence(int64_t row) const {
    if (!m_sequences.defined()) {
        return {};
    }
    if (row < 0 || row >= m_sequences.size(0)) {
        throw GenerationError("row " + std::to_string(row) + " does not exist (rows: " +
                              std::to_string(m_sequences.size(0)) + ")");
    }
    at::Tensor values = m_sequences[row].contiguous();
    return {values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + values.numel()};
}

std::vector<int64_t> Generator::generatedTokens() const {
    std::vector<int64_t> all = sequence(0);
    std::vector<int64_t> generated;
    for (size_t i = static_cast<size_t>(m_promptLength); i < all.size(); ++i) {
        generated.push_back(all[i]);
        if (m_options.stopAtEos && all[i] == m_options.eosTokenId) {
            break;
        }
    }
    return generated;
}

std::vector<double> Generator::beamScores() const {
    if (!m_beamScores.defined()) {
        return {};
    }
    at::Tensor scores = m_beamScores.contiguous();
    return {scores.data_ptr<double>(), scores.data_ptr<double>() + scores.numel()};
}

} // namespace kvscope::runtime
