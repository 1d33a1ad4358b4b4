// SPDX-License-Identifier: GPL-3.0-or-later
// Caches and masks working together: for every preset and every cache kind, the logits of cached
// token-by-token generation equal those of recomputing the whole sequence without a cache (full
// precision: within 1e-4; quantized caches: within a per-bit-width bound, and the measured
// difference is printed), with random weights and with the presets' trained ones (whose sharper logits
// set the quantized bounds).
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/ModelSource.h"

#include "ModelTestHelpers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

using CacheOptions = kvscope::config::CacheSettings;
using kvscope::runtime::GenerationOptions;
using kvscope::runtime::Generator;

namespace {

struct CacheCase {
    std::string name;
    CacheOptions options;
};

// Names the case in failure messages instead of gtest's byte dump.
void PrintTo(const CacheCase& cacheCase, std::ostream* out) { *out << cacheCase.name; }

CacheOptions cache(const std::string& kind, const std::string& backend = "min-max", int nbits = 4) {
    CacheOptions options;
    options.kind = kvscope::config::cacheKindFromString(kind).value();
    options.backend = kvscope::config::quantizerBackendFromString(backend).value();
    options.nbits = nbits;
    // Small enough that the residual flushes several times within the run.
    options.residualLength = 5;
    return options;
}

std::vector<CacheCase> cacheCases() {
    return {{"dynamic", cache("dynamic")},
            {"static", cache("static")},
            {"offloaded", cache("offloaded")},
            {"minmax8", cache("quantized", "min-max", 8)},
            {"minmax4", cache("quantized", "min-max", 4)},
            {"minmax2", cache("quantized", "min-max", 2)},
            {"hqq4", cache("quantized", "hqq", 4)}};
}

using Case = std::tuple<std::string, CacheCase>;

class CacheConsistencyTest : public ::testing::TestWithParam<Case> {
public:
    static void TearDownTestSuite() {
        std::printf("\nmax |cached - recomputed| logit difference per preset and cache:\n%-11s", "");
        for (const auto& cacheCase : cacheCases()) {
            std::printf(" %10s", cacheCase.name.c_str());
        }
        for (const std::string& preset : kvscope::testing::presetNames()) {
            std::printf("\n%-11s", preset.c_str());
            for (const auto& cacheCase : cacheCases()) {
                auto it = measured().find({preset, cacheCase.name});
                it == measured().end() ? std::printf(" %10s", "-") : std::printf(" %10.2e", it->second);
            }
        }
        std::printf("\n");
    }

protected:
    static std::map<std::pair<std::string, std::string>, double>& measured() {
        static std::map<std::pair<std::string, std::string>, double> values;
        return values;
    }
};

} // namespace

namespace {

/// Generates 16 sampled tokens after a 13-token prompt and checks every step against a recompute.
void expectCachedEqualsRecompute(kvscope::model::LanguageModel& model, const std::string& label,
                                 const CacheCase& cacheCase, double& worst) {
    GenerationOptions options;
    options.maxNewTokens = 16;
    options.stopAtEos = false;
    // Sampling (seeded) rather than greedy, so that random weights do not settle on one repeated token.
    options.temperature = 1.0;
    options.seed = 5;
    Generator generator(model, cacheCase.options, options);
    // 13 prompt tokens: past the presets' windows/chunks (8) during prefill, more crossings while decoding.
    generator.prefill(kvscope::model::ByteTokenizer::encode("KV cache test"));
    worst = generator.recomputeDifference();
    while (!generator.finished()) {
        generator.step();
        worst = std::max(worst, generator.recomputeDifference());
    }
    EXPECT_EQ(generator.generatedCount(), 16);
    const double bound = kvscope::runtime::CacheFactory::logitTolerance(cacheCase.options);
    EXPECT_LE(worst, bound) << label << " with " << cacheCase.name;
    if (cacheCase.options.kind == kvscope::config::CacheKind::Quantized) {
        // A quantized cache that matched exactly would mean the quantizer never ran.
        EXPECT_GT(worst, 0.0) << label << " with " << cacheCase.name;
    }
}

} // namespace

TEST_P(CacheConsistencyTest, CachedStepsEqualRecompute) {
    const auto& [preset, cacheCase] = GetParam();
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig(preset), 17);
    expectCachedEqualsRecompute(*model, preset, cacheCase, measured()[{preset, cacheCase.name}]);
}

// What `run --check` holds for a preset's default (trained) weights.
TEST_P(CacheConsistencyTest, TrainedWeightsCachedStepsEqualRecompute) {
    const auto& [preset, cacheCase] = GetParam();
    auto loaded = kvscope::runtime::ModelSource::load(kvscope::testing::presetSettings(preset, std::nullopt),
                                                      at::Device(at::kCPU));
    double worst = 0.0;
    expectCachedEqualsRecompute(*loaded.model, preset + " (trained)", cacheCase, worst);
}

INSTANTIATE_TEST_SUITE_P(EveryPresetAndCache, CacheConsistencyTest,
                         ::testing::Combine(::testing::ValuesIn(kvscope::testing::presetNames()),
                                            ::testing::ValuesIn(cacheCases())),
                         [](const ::testing::TestParamInfo<Case>& info) {
                             std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                             for (char& c : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(c))) {
                                     c = '_';
                                 }
                             }
                             return name;
                         });
