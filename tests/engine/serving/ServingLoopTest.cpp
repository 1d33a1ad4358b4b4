// SPDX-License-Identifier: GPL-3.0-or-later
// The proof that paging changes nothing: every request of a batched, paged run produces the tokens and (to
// 1e-4) the logits of the same prompt run alone on a dynamic cache, on every decoder preset, with and
// without prefix hits, across chunked prefills and preemptions, under both free policies.
#include "kvscope/serving/ServingLoop.h"

#include "ModelTestHelpers.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/trace/RecordingSink.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <map>

using namespace kvscope;

namespace {

constexpr double kToleranceInServingLoop = 1e-4;

std::vector<std::string> decoderPresetsInServingLoop() {
    return {"gemma2", "gemma3", "gemma3n", "llama", "llama4", "mistral", "qwen3-next"};
}

struct SoloRun {
    std::vector<int64_t> tokens;
    std::vector<at::Tensor> logits;
};

/// The oracle: the prompt alone on a dynamic cache, greedy, `maxTokens` tokens.
SoloRun solo(model::LanguageModel& model, const std::vector<int64_t>& prompt, int64_t maxTokens) {
    auto cache = runtime::CacheFactory::create(model, config::CacheSettings{}, 0);
    SoloRun run;
    at::Tensor input = at::tensor(prompt, at::kLong).unsqueeze(0);
    for (int64_t step = 0; step < maxTokens; ++step) {
        const at::Tensor logits = model.forward(input, cache.get())[0][-1];
        run.logits.push_back(logits);
        run.tokens.push_back(logits.argmax().item<int64_t>());
        input = at::full({1, 1}, run.tokens.back(), at::kLong);
    }
    return run;
}

std::vector<int64_t> bytes(const std::string& text) {
    std::vector<int64_t> ids{256}; // the byte tokenizer's bos
    for (const unsigned char c : text) {
        ids.push_back(c);
    }
    return ids;
}

/// Shared prefixes (a system prompt, a document), a prompt longer than a step's budget, a burst that
/// outgrows the pool, a late arrival that finds cached blocks, and a request with its own cache salt.
paged::Workload mixedWorkload() {
    const std::string system = "You are kvscope, a helpful tutor. ";
    std::vector<paged::WorkloadRequest> requests{
        {"chat-a", 0, std::nullopt, bytes(system + "What is a page?"), 8, true, ""},
        {"chat-b", 0, std::nullopt, bytes(system + "Why share blocks?"), 7, true, ""},
        {"long", 1, std::nullopt,
         bytes(system + "Summarise this long document about caches and blocks, please."), 6, true, ""},
        {"burst-1", 2, std::nullopt, bytes("Burst one asks a question"), 9, true, ""},
        {"burst-2", 2, std::nullopt, bytes("Burst two asks another one"), 9, true, ""},
        {"late", 9, std::nullopt, bytes(system + "What is a page?"), 5, true, ""},
        {"salted", 9, std::nullopt, bytes(system + "What is a page?"), 4, true, "tenant-2"},
    };
    return paged::Workload{"mixed", {}, requests};
}

/// `numBlocks`: small enough that the burst preempts (mistral's all-sliding layers free blocks as they go,
/// so it needs a smaller pool for that).
paged::PagedConfig tightConfig(paged::FreePolicy policy, bool prefixCaching, std::int32_t numBlocks = 40) {
    paged::PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = numBlocks;
    config.maxNumBatchedTokens = 24;
    config.maxNumSeqs = 4;
    config.prefixCaching = prefixCaching;
    config.freePolicy = policy;
    return config;
}

struct Observed {
    int64_t batchedDecodes = 0;
    int64_t preemptions = 0;
    int64_t cachedTokens = 0;
    int64_t chunkedPrompts = 0;
};

using SoloRuns = std::map<std::string, SoloRun>;

SoloRuns soloRuns(model::LanguageModel& model, const paged::Workload& workload) {
    SoloRuns runs;
    for (const paged::WorkloadRequest& described : workload.requests) {
        runs[described.id] = solo(model, described.promptIds, described.maxTokens);
    }
    return runs;
}

Observed expectSoloEquivalence(model::LanguageModel& model, const SoloRuns& soloRuns,
                               const paged::PagedConfig& config, const std::string& what) {
    const runtime::ByteTextCodec text;
    serving::ServingLoop loop(model, text, config);
    loop.keepLogits(true);
    const paged::Workload workload = mixedWorkload();
    loop.add(workload);
    loop.run();
    Observed observed;
    observed.preemptions = loop.scheduler().stats().preemptions;
    observed.batchedDecodes = loop.runner().batchedDecodes();
    for (const paged::WorkloadRequest& described : workload.requests) {
        const paged::Request& request = loop.scheduler().request(described.id);
        observed.cachedTokens += std::max<int64_t>(request.cachedTokens, 0);
        observed.chunkedPrompts += request.numPromptTokens() > config.maxNumBatchedTokens ? 1 : 0;
        const SoloRun& expected = soloRuns.at(described.id);
        EXPECT_EQ(request.outputIds, expected.tokens) << what << " " << described.id;
        const auto& logits = loop.sampledLogits(described.id);
        EXPECT_EQ(logits.size(), expected.logits.size()) << what << " " << described.id;
        if (logits.size() != expected.logits.size()) {
            continue;
        }
        for (size_t i = 0; i < logits.size(); ++i) {
            EXPECT_LT(kvscope::testing::maxAbsDifference(logits[i], expected.logits[i]), kToleranceInServingLoop)
                << what << " " << described.id << " token " << i;
        }
    }
    return observed;
}

} // namespace

TEST(ServingLoopTest, EveryRequestMatchesItsSoloRunOnEveryDecoderPreset) {
    for (const std::string& preset : decoderPresetsInServingLoop()) {
        auto loaded =
            runtime::ModelSource::load(kvscope::testing::presetSettings(preset, std::nullopt), at::kCPU);
        const bool linear = serving::LayerGroups(loaded.model->architecture()).hasLinearAttention();
        const SoloRuns expected = soloRuns(*loaded.model, mixedWorkload());
        for (const auto policy : {paged::FreePolicy::Document, paged::FreePolicy::Current}) {
            for (const bool prefixCaching : {true, false}) {
                const std::string what = preset + " " + std::string(paged::toString(policy)) +
                                         (prefixCaching ? " prefix caching" : " no prefix caching");
                const Observed observed = expectSoloEquivalence(
                    *loaded.model, expected,
                    tightConfig(policy, prefixCaching, preset == "mistral" ? 16 : 40), what);
                // The workload must exercise what it claims to.
                EXPECT_GT(observed.preemptions, 0) << what;
                EXPECT_GT(observed.chunkedPrompts, 0) << what;
                // Decode steps run as left-padded batches, except where requests keep linear-attention
                // states.
                EXPECT_EQ(observed.batchedDecodes > 0, !linear) << what;
                if (prefixCaching && !linear) {
                    EXPECT_GT(observed.cachedTokens, 0) << what;
                } else {
                    EXPECT_EQ(observed.cachedTokens, 0) << what;
                }
            }
        }
    }
}

TEST(ServingLoopTest, SeededSamplingDrawsWhatTheRequestDrawsAlone) {
    auto loaded =
        runtime::ModelSource::load(kvscope::testing::presetSettings("llama", std::nullopt), at::kCPU);
    const runtime::ByteTextCodec text;
    serving::SamplingSettings sampling{0.8, 20, 7};
    std::map<std::string, std::vector<int64_t>> batched;
    {
        serving::ServingLoop loop(*loaded.model, text, tightConfig(paged::FreePolicy::Document, true),
                                  sampling);
        loop.add(mixedWorkload());
        loop.run();
        for (const paged::Request* request : loop.scheduler().requests()) {
            batched[request->id] = request->outputIds;
        }
    }
    // Each request alone in its own loop samples the same tokens.
    for (const paged::WorkloadRequest& described : mixedWorkload().requests) {
        serving::ServingLoop alone(*loaded.model, text, tightConfig(paged::FreePolicy::Document, true),
                                   sampling);
        paged::WorkloadRequest first = described;
        first.arrivalStep = 0;
        alone.add(paged::Workload{"one", {}, {first}});
        alone.run();
        EXPECT_EQ(alone.scheduler().request(described.id).outputIds, batched[described.id]) << described.id;
    }
}

TEST(ServingLoopTest, LinearAttentionModelsServeWithoutPrefixHitsAndSayWhy) {
    auto loaded =
        runtime::ModelSource::load(kvscope::testing::presetSettings("qwen3-next", std::nullopt), at::kCPU);
    const runtime::ByteTextCodec text;
    serving::ServingLoop loop(*loaded.model, text, tightConfig(paged::FreePolicy::Document, true));
    EXPECT_FALSE(loop.config().prefixCaching);
    ASSERT_EQ(loop.notices().size(), 1u);
    EXPECT_NE(loop.notices()[0].find("linear-attention"), std::string::npos) << loop.notices()[0];
}

TEST(ServingLoopTest, RefusesTheEncoderDecoderPresetWithTheReason) {
    auto loaded =
        runtime::ModelSource::load(kvscope::testing::presetSettings("whisper", std::nullopt), at::kCPU);
    const runtime::ByteTextCodec text;
    const std::string why = kvscope::testing::refusal([&] {
        serving::ServingLoop loop(*loaded.model, text, tightConfig(paged::FreePolicy::Document, true));
    });
    EXPECT_NE(why.find("encoder-decoder"), std::string::npos) << why;
    EXPECT_NE(why.find("cross-attention"), std::string::npos) << why;
}

TEST(ServingLoopTest, RecordsStepsLogitsAndPagedEvents) {
    auto loaded =
        runtime::ModelSource::load(kvscope::testing::presetSettings("llama", std::nullopt), at::kCPU);
    const runtime::ByteTextCodec text;
    trace::RecordingSink sink;
    serving::ServingLoop loop(*loaded.model, text, tightConfig(paged::FreePolicy::Document, true), {}, &sink);
    loop.add(mixedWorkload());
    loop.run();
    int64_t begins = 0;
    int64_t ends = 0;
    int64_t logits = 0;
    int64_t sampling = 0;
    int64_t lastStep = -1;
    for (const trace::Event& event : sink.events()) {
        EXPECT_GE(event.step, lastStep) << "events arrive in step order";
        lastStep = std::max(lastStep, event.step);
        begins += event.kind() == trace::EventKind::StepBegin;
        ends += event.kind() == trace::EventKind::StepEnd;
        logits += event.kind() == trace::EventKind::Logits;
        if (const auto* scheduled = std::get_if<trace::RequestScheduledEvent>(&event.payload)) {
            sampling += scheduled->samples;
        }
    }
    EXPECT_EQ(begins, loop.scheduler().step());
    EXPECT_EQ(ends, loop.scheduler().step());
    EXPECT_EQ(logits, sampling);
    int64_t outputs = 0;
    for (const paged::Request* request : loop.scheduler().requests()) {
        outputs += static_cast<int64_t>(request->outputIds.size());
    }
    EXPECT_EQ(logits, outputs);
}
