// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/Timeline.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using kvscope::model::ByteTokenizer;
using kvscope::model::ModelLoader;
using CacheOptions = kvscope::config::CacheSettings;
using kvscope::runtime::GenerationError;
using kvscope::runtime::GenerationOptions;
using kvscope::runtime::Generator;

namespace {

const std::vector<int64_t> kPromptInGenerator = ByteTokenizer::encode("Hello, cache");

GenerationOptions tokensInGenerator(int64_t count) {
    GenerationOptions options;
    options.maxNewTokens = count;
    options.stopAtEos = false;
    return options;
}

CacheOptions cacheKind(const std::string& kind) {
    CacheOptions options;
    options.kind = kvscope::config::cacheKindFromString(kind).value();
    return options;
}

std::vector<int64_t> generate(Generator& generator, const std::vector<int64_t>& prompt = kPromptInGenerator) {
    generator.prefill(prompt);
    while (!generator.finished()) {
        generator.step();
    }
    return generator.generatedTokens();
}

/// Sum of the log-probabilities of `sequence`'s tokens after the prompt, recomputed without a cache.
double sequenceLogProbability(kvscope::model::LanguageModel& model, const std::vector<int64_t>& sequence,
                              size_t promptLength) {
    const at::Tensor ids = at::tensor(sequence, at::kLong).unsqueeze(0);
    const at::Tensor logProbabilities = at::log_softmax(model.forward(ids, nullptr)[0].to(at::kDouble), -1);
    double total = 0.0;
    for (size_t position = promptLength; position < sequence.size(); ++position) {
        total += logProbabilities[static_cast<int64_t>(position) - 1][sequence[position]].item<double>();
    }
    return total;
}

} // namespace

using kvscope::testing::refusal;

TEST(GeneratorTest, GreedyPicksTheArgmaxOfRecomputedLogits) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    Generator generator(*model, cacheKind("dynamic"), tokensInGenerator(8));
    const std::vector<int64_t> generated = generate(generator);
    ASSERT_EQ(generated.size(), 8u);
    std::vector<int64_t> sequence = kPromptInGenerator;
    for (int64_t token : generated) {
        const at::Tensor logits = model->forward(at::tensor(sequence, at::kLong).unsqueeze(0), nullptr);
        EXPECT_EQ(logits[0][-1].argmax().item<int64_t>(), token);
        sequence.push_back(token);
    }
    EXPECT_EQ(generator.sequence(), sequence);
    EXPECT_LE(generator.recomputeDifference(), 1e-4);
    EXPECT_TRUE(generator.finished());
    EXPECT_THROW(generator.step(), GenerationError);
}

TEST(GeneratorTest, SamplingIsSeededAndTopOneIsGreedy) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma2"), 2);
    GenerationOptions sampling = tokensInGenerator(12);
    sampling.temperature = 1.5;
    sampling.seed = 42;
    Generator first(*model, cacheKind("dynamic"), sampling);
    Generator second(*model, cacheKind("dynamic"), sampling);
    const auto a = generate(first);
    EXPECT_EQ(a, generate(second));
    EXPECT_EQ(a, generate(first)); // a new prefill restarts the sampler from the seed
    sampling.seed = 43;
    Generator other(*model, cacheKind("dynamic"), sampling);
    EXPECT_NE(a, generate(other));

    GenerationOptions topOne = tokensInGenerator(12);
    topOne.temperature = 0.7;
    topOne.topK = 1;
    Generator top(*model, cacheKind("dynamic"), topOne);
    Generator greedy(*model, cacheKind("dynamic"), tokensInGenerator(12));
    EXPECT_EQ(generate(top), generate(greedy));
}

TEST(GeneratorTest, BeamScoresEqualRecomputedLogProbabilities) {
    // Dynamic caches repeat the prefilled cache (batchRepeatInterleave); static and linear-attention
    // caches prefill every beam; every step reorders the cache rows (Cache::reorder).
    const std::vector<std::pair<std::string, std::string>> runs = {
        {"llama", "dynamic"}, {"gemma3", "static"}, {"qwen3-next", "dynamic"}, {"whisper", "dynamic"},
        {"mistral", "offloaded"}};
    for (const auto& [preset, kind] : runs) {
        SCOPED_TRACE(preset + " " + kind);
        auto model = ModelLoader::builtin(kvscope::testing::presetConfig(preset), 3);
        GenerationOptions options = tokensInGenerator(10);
        options.beams = 3;
        Generator generator(*model, cacheKind(kind), options);
        generator.prefill(kPromptInGenerator);
        EXPECT_EQ(generator.rows(), 3);
        while (!generator.finished()) {
            generator.step();
            // 3e-4: qwen3-next's gated delta rule sums its recurrence step by step when cached and over the
            // whole sequence when recomputed; with OpenBLAS's blocked GEMM (the default BLAS since issue 21)
            // the two orders differ by up to 1.2e-4 in float32 (under 1e-4 with the reference BLAS), with
            // LibTorch 2.13's CPU kernels (the libtorch2 preset) by up to 2.3e-4.
            EXPECT_LE(generator.recomputeDifference(), 3e-4);
        }
        const std::vector<double> scores = generator.beamScores();
        ASSERT_EQ(scores.size(), 3u);
        for (int64_t row = 0; row < 3; ++row) {
            EXPECT_NEAR(sequenceLogProbability(*model, generator.sequence(row), kPromptInGenerator.size()),
                        scores[static_cast<size_t>(row)], 1e-3)
                << "beam " << row;
        }
        EXPECT_GE(scores[0], scores[1]);
        EXPECT_GE(scores[1], scores[2]);
        EXPECT_NE(generator.sequence(0), generator.sequence(1));
    }
}

TEST(GeneratorTest, RewindContinuesAsIfTheTokensWereNeverGenerated) {
    for (const std::string& kind : std::vector<std::string>{"dynamic", "quantized", "offloaded"}) {
        SCOPED_TRACE(kind);
        auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 4);
        CacheOptions cache = cacheKind(kind);
        cache.residualLength = 4;
        const bool exact = cache.kind != kvscope::config::CacheKind::Quantized;
        Generator generator(*model, cache, tokensInGenerator(12));
        const std::vector<int64_t> straight = generate(generator);
        generator.rewind(5);
        EXPECT_EQ(generator.generatedCount(), 7);
        EXPECT_EQ(generator.cache().seqLength(), static_cast<int64_t>(kPromptInGenerator.size()) + 6);
        EXPECT_FALSE(generator.finished());
        while (!generator.finished()) {
            generator.step();
            if (exact) {
                EXPECT_LE(generator.recomputeDifference(), 1e-4);
            }
        }
        if (exact) {
            EXPECT_EQ(generator.generatedTokens(), straight);
        }
        // Rewinding every generated token goes back to the prompt.
        generator.rewind(generator.generatedCount());
        EXPECT_EQ(generator.sequence(), kPromptInGenerator);
        EXPECT_EQ(generator.cache().seqLength(), static_cast<int64_t>(kPromptInGenerator.size()) - 1);
        generator.step();
        EXPECT_EQ(generator.generatedCount(), 1);
    }
}

TEST(GeneratorTest, RewindRefusalsSayWhy) {
    auto llama = ModelLoader::builtin(kvscope::testing::presetConfig("llama"));
    Generator fixed(*llama, cacheKind("static"), tokensInGenerator(4));
    generate(fixed);
    EXPECT_NE(refusal([&] { fixed.rewind(1); }).find("static caches cannot crop"), std::string::npos);
    EXPECT_NE(refusal([&] { fixed.rewind(9); }).find("between 0 and 4"), std::string::npos);

    auto mistral = ModelLoader::builtin(kvscope::testing::presetConfig("mistral")); // window 8
    Generator sliding(*mistral, cacheKind("dynamic"), tokensInGenerator(4));
    generate(sliding); // prompt of 13 tokens: past the window
    EXPECT_NE(refusal([&] { sliding.rewind(1); }).find("evicted"), std::string::npos);

    auto qwen = ModelLoader::builtin(kvscope::testing::presetConfig("qwen3-next"));
    Generator linear(*qwen, cacheKind("dynamic"), tokensInGenerator(3));
    generate(linear);
    EXPECT_NE(refusal([&] { linear.rewind(1); }).find("linear-attention state"), std::string::npos);

    GenerationOptions beams = tokensInGenerator(3);
    beams.beams = 2;
    Generator beam(*llama, cacheKind("dynamic"), beams);
    generate(beam);
    EXPECT_NE(refusal([&] { beam.rewind(1); }).find("beams 1"), std::string::npos);
}

TEST(GeneratorTest, OptionsAreCheckedWithTheAllowedValues) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"));
    GenerationOptions options = tokensInGenerator(4);
    options.beams = 2;
    options.temperature = 1.0;
    EXPECT_NE(refusal([&] { Generator{*model, cacheKind("dynamic"), options}; }).find("temperature 0"), std::string::npos);
    EXPECT_NE(refusal([&] { Generator{*model, cacheKind("dynamic"), tokensInGenerator(0)}; }).find(">= 1"), std::string::npos);
    CacheOptions shortStatic = cacheKind("static");
    shortStatic.maxCacheLen = 5;
    Generator tooShort(*model, shortStatic, tokensInGenerator(2));
    EXPECT_NE(refusal([&] { tooShort.prefill(kPromptInGenerator); }).find("--max-cache-len 5"), std::string::npos);
    CacheOptions badBits = cacheKind("quantized");
    badBits.nbits = 5;
    Generator bits(*model, badBits, tokensInGenerator(2));
    EXPECT_THROW(bits.prefill(kPromptInGenerator), kvscope::cache::CacheError);
    EXPECT_NE(refusal([&] { Generator{*model, cacheKind("dynamic"), tokensInGenerator(2)}.prefill({}); }).find("empty"),
              std::string::npos);
    Generator notStarted(*model, cacheKind("dynamic"), tokensInGenerator(2));
    EXPECT_THROW(notStarted.step(), GenerationError);
}

TEST(GeneratorTest, EventsBracketEveryStep) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma3"));
    kvscope::trace::RecordingSink sink;
    Generator generator(*model, cacheKind("dynamic"), tokensInGenerator(4), &sink);
    generate(generator);
    std::vector<int64_t> beginSteps;
    int64_t ends = 0;
    int64_t updates = 0;
    int64_t masks = 0;
    for (const auto& event : sink.events()) {
        switch (event.kind()) {
        case kvscope::trace::EventKind::StepBegin:
            beginSteps.push_back(event.step);
            break;
        case kvscope::trace::EventKind::StepEnd:
            ++ends;
            break;
        case kvscope::trace::EventKind::Update:
            ++updates;
            break;
        case kvscope::trace::EventKind::MaskSizes:
            ++masks;
            break;
        default:
            break;
        }
    }
    EXPECT_EQ(beginSteps, (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(ends, 4);
    EXPECT_EQ(updates, 4 * 6); // six layers, four forward passes
    EXPECT_EQ(masks, 4 * 6);
    ASSERT_FALSE(sink.events().empty());
    EXPECT_EQ(sink.events().front().kind(), kvscope::trace::EventKind::StepBegin);
    EXPECT_EQ(std::get<kvscope::trace::StepBeginEvent>(sink.events().front().payload).text, "Hello, cache");
    EXPECT_EQ(sink.events().back().kind(), kvscope::trace::EventKind::StepEnd);
}

TEST(GeneratorTest, StopsAtEos) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    Generator probe(*model, cacheKind("dynamic"), tokensInGenerator(3));
    const auto generated = generate(probe);
    // Declare the second generated token the eos: generation stops right after it.
    GenerationOptions options = tokensInGenerator(10);
    options.stopAtEos = true;
    options.eosTokenId = generated[1];
    Generator generator(*model, cacheKind("dynamic"), options);
    const auto stopped = generate(generator);
    std::vector<int64_t> expected;
    for (int64_t token : generated) {
        expected.push_back(token);
        if (token == generated[1]) {
            break;
        }
    }
    EXPECT_EQ(stopped, expected);
    EXPECT_TRUE(generator.finished());
}

TEST(GeneratorTest, PromptLookupGivesGreedyTokensAndCropsTheRejectedDrafts) {
    // A repetitive prompt, so that drafts are found; the tokens are greedy decoding's whatever was accepted.
    const std::vector<int64_t> prompt = ByteTokenizer::encode("abcab abcab abcab abcab ab");
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    Generator plain(*model, cacheKind("dynamic"), tokensInGenerator(12));
    const std::vector<int64_t> greedy = generate(plain, prompt);
    GenerationOptions lookup = tokensInGenerator(12);
    lookup.promptLookupNumTokens = 3;
    Generator speculative(*model, cacheKind("dynamic"), lookup);
    EXPECT_EQ(generate(speculative, prompt), greedy);
    int64_t added = 0;
    for (const auto& step : speculative.speculativeSteps()) {
        EXPECT_LE(step.accepted, step.drafted);
        added += step.added;
        // The cache holds every token but the last picked one, which the next step feeds.
        EXPECT_EQ(step.cacheLength, static_cast<int64_t>(prompt.size()) + added - 1);
    }
    EXPECT_EQ(added, 12);
}

TEST(GeneratorTest, PromptLookupRecordsEachVerificationAsASpeculationEvent) {
    // Gemma 3's preset has sliding layers: their seq_length rolls back with the full layers' through the recorded past.
    const std::vector<int64_t> prompt = ByteTokenizer::encode("abcab abcab abcab abcab ab");
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma3"), 1);
    GenerationOptions lookup = tokensInGenerator(12);
    lookup.promptLookupNumTokens = 3;
    kvscope::trace::Timeline timeline;
    Generator generator(*model, cacheKind("dynamic"), lookup, &timeline);
    generate(generator, prompt);
    std::vector<std::pair<int64_t, kvscope::trace::SpeculationEvent>> events;
    for (const auto& event : timeline.events()) {
        if (const auto* speculation = std::get_if<kvscope::trace::SpeculationEvent>(&event.payload)) {
            EXPECT_EQ(event.layer, -1);
            events.emplace_back(event.step, *speculation);
        }
    }
    const auto& steps = generator.speculativeSteps();
    ASSERT_EQ(events.size(), steps.size());
    const std::vector<int64_t> sequence = generator.sequence();
    int64_t position = static_cast<int64_t>(prompt.size());
    int64_t rolledBack = 0;
    const kvscope::runtime::ByteTextCodec bytes;
    const auto layers = static_cast<size_t>(model->architecture().numLayers());
    for (size_t index = 0; index < steps.size(); ++index) {
        const auto& [step, speculation] = events[index];
        EXPECT_EQ(step, steps[index].step);
        EXPECT_EQ(speculation.source, kvscope::trace::DraftSource::PromptLookup);
        EXPECT_EQ(speculation.drafted(), steps[index].drafted) << "step " << step;
        EXPECT_EQ(speculation.accepted, steps[index].accepted) << "step " << step;
        EXPECT_EQ(speculation.firstPosition, position) << "the drafts follow the text so far, step " << step;
        // The accepted drafts are the text's next tokens, and each draft names its byte.
        for (int64_t draft = 0; draft < speculation.accepted; ++draft) {
            EXPECT_EQ(speculation.draftIds[static_cast<size_t>(draft)], sequence[static_cast<size_t>(position + draft)]);
        }
        for (size_t draft = 0; draft < speculation.draftIds.size(); ++draft) {
            EXPECT_EQ(speculation.piece(draft), bytes.decode({speculation.draftIds[draft]})) << "step " << step;
        }
        ASSERT_EQ(speculation.lengthsBefore.size(), layers);
        ASSERT_EQ(speculation.lengthsAfter.size(), layers);
        const kvscope::trace::StepState state = timeline.stateAt(step);
        for (size_t layer = 0; layer < layers; ++layer) {
            // Every layer, sliding or not, counts every token and ends the step holding all but the last picked one.
            EXPECT_EQ(speculation.lengthsBefore[layer], index == 0 ? 0 : position - 1) << "step " << step;
            EXPECT_EQ(speculation.lengthsAfter[layer], steps[index].cacheLength) << "step " << step;
            EXPECT_EQ(state.layers[layer].seqLength, speculation.lengthsAfter[layer]) << "the folded state, step " << step;
        }
        rolledBack += speculation.drafted() - speculation.accepted;
        position += steps[index].added;
    }
    EXPECT_GT(rolledBack, 0) << "no draft was rolled back: the case tests no rollback";
    // Each step's end names the model's own token, the last the step added.
    for (const auto& event : timeline.events()) {
        if (const auto* end = std::get_if<kvscope::trace::StepEndEvent>(&event.payload)) {
            EXPECT_EQ(end->text, bytes.decode({end->tokenId}));
        }
    }
}

TEST(GeneratorTest, AnAssistantModelDraftsAndTheModelKeepsWhatGreedyDecodingWouldPick) {
    // Gemma 3's preset (sliding layers) drafted for by itself (every draft kept) and by another seed's weights
    // (most rejected): either way the text is the model's greedy one.
    const std::vector<int64_t> prompt = ByteTokenizer::encode("The key-value cache");
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma3"), 1);
    auto other = ModelLoader::builtin(kvscope::testing::presetConfig("gemma3"), 2);
    Generator plain(*model, cacheKind("dynamic"), tokensInGenerator(10));
    const std::vector<int64_t> greedy = generate(plain, prompt);
    const struct {
        kvscope::model::LanguageModel* assistant;
        bool keepsAll;
    } cases[] = {{model.get(), true}, {other.get(), false}};
    for (const auto& c : cases) {
        GenerationOptions assisted = tokensInGenerator(10);
        assisted.assistant = c.assistant;
        assisted.numAssistantTokens = 3;
        kvscope::trace::Timeline timeline;
        Generator generator(*model, cacheKind("dynamic"), assisted, &timeline);
        EXPECT_EQ(generate(generator, prompt), greedy);
        int64_t length = static_cast<int64_t>(prompt.size());
        int64_t rolledBack = 0;
        size_t verification = 0;
        for (const auto& event : timeline.events()) {
            const auto* speculation = std::get_if<kvscope::trace::SpeculationEvent>(&event.payload);
            if (speculation == nullptr) {
                continue;
            }
            // Three drafts a step, fewer only where the budget of new tokens ends.
            const int64_t left = static_cast<int64_t>(prompt.size()) + 10 - length - 1;
            EXPECT_EQ(speculation->source, kvscope::trace::DraftSource::AssistantModel);
            EXPECT_EQ(speculation->drafted(), std::min<int64_t>(3, left)) << "step " << event.step;
            EXPECT_EQ(speculation->firstPosition, length);
            if (c.keepsAll) {
                EXPECT_EQ(speculation->accepted, speculation->drafted()) << "a model agrees with itself";
            }
            EXPECT_EQ(speculation->accepted, generator.speculativeSteps()[verification].accepted);
            rolledBack += speculation->drafted() - speculation->accepted;
            length += speculation->accepted + 1;
            ++verification;
        }
        EXPECT_EQ(verification, generator.speculativeSteps().size());
        EXPECT_EQ(length, static_cast<int64_t>(prompt.size()) + 10);
        EXPECT_EQ(rolledBack > 0, !c.keepsAll);
    }
}

TEST(GeneratorTest, AnAssistantWithAnotherVocabularyIsRefused) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    kvscope::config::ModelConfig wider = kvscope::testing::presetConfig("llama");
    wider.vocabSize = 300;
    auto assistant = ModelLoader::builtin(wider, 1);
    GenerationOptions assisted = tokensInGenerator(4);
    assisted.assistant = assistant.get();
    EXPECT_EQ(refusal([&] { Generator{*model, cacheKind("dynamic"), assisted}; }),
              "the assistant model's vocabulary (300 ids) is not the model's (259): assisted decoding needs two "
              "models that share one vocabulary");
}

TEST(GeneratorTest, PromptLookupRefusalsNameTheFix) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"));
    GenerationOptions beams = tokensInGenerator(4);
    beams.promptLookupNumTokens = 3;
    beams.beams = 2;
    EXPECT_NE(refusal([&] { Generator{*model, cacheKind("dynamic"), beams}; }).find("beams 1 and temperature 0"),
              std::string::npos);
    GenerationOptions lookup = tokensInGenerator(4);
    lookup.promptLookupNumTokens = 3;
    CacheOptions staticCache = cacheKind("static");
    staticCache.maxCacheLen = 64;
    Generator onStatic(*model, staticCache, lookup);
    EXPECT_NE(refusal([&] { onStatic.prefill(kPromptInGenerator); }).find("--cache dynamic"), std::string::npos);
}
