// SPDX-License-Identifier: GPL-3.0-or-later
// `bench model`: the engine and the plain loop written in the benchmark pick the same tokens (the plain
// loop is the same model), both phases are timed, and a model the plain loop does not cover is timed alone.
#include "kvscope/cli/ModelBenchmark.h"


#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <vector>

using kvscope::cli::ModelBenchmark;
using kvscope::cli::ModelBenchmarkOptions;

namespace {

ModelBenchmarkOptions smallInModelBenchmark(const std::string& preset) {
    ModelBenchmarkOptions options;
    options.run.preset = preset;
    options.run.weightSeed = 3;
    options.run.threads = 1;
    options.promptTokens = 12;
    options.decodeTokens = 5;
    options.repeats = 1;
    return options;
}

} // namespace

TEST(ModelBenchmarkTest, EngineAndPlainLoopPickTheSameTokensAndBothAreTimed) {
    for (bool record : {true, false}) {
        ModelBenchmarkOptions options = smallInModelBenchmark("llama");
        options.record = record;
        const nlohmann::json result = ModelBenchmark::run(options);
        EXPECT_EQ(result.at("model"), "llama");
        EXPECT_EQ(result.at("prompt_tokens"), 12);
        EXPECT_EQ(result.at("decode_tokens"), 5);
        EXPECT_EQ(result.at("recorded"), record);
        EXPECT_TRUE(result.at("tokens_match").get<bool>());
        EXPECT_EQ(result.at("threads"), 1);
        EXPECT_TRUE(result.contains("blas"));
        for (const char* loop : {"engine", "plain"}) {
            for (const char* key :
                 {"prefill_tokens_per_s", "decode_tokens_per_s", "prefill_ms", "decode_ms", "prefill_cpu_ms",
                  "decode_cpu_ms", "prefill_quiet_ms", "decode_quiet_ms"}) {
                EXPECT_GT(result.at(loop).at(key).get<double>(), 0.0) << loop << " " << key;
            }
        }
        EXPECT_TRUE(result.at("overhead_percent").contains("prefill"));
        EXPECT_TRUE(result.at("overhead_percent").contains("decode"));
        EXPECT_TRUE(result.at("overhead_cpu_percent").contains("decode"));
        EXPECT_TRUE(result.at("overhead_quiet_percent").contains("decode"));
    }
}

TEST(ModelBenchmarkTest, QuietTimeSumsEachStepsFastestRepeat) {
    struct Case {
        const char* what;
        std::vector<std::vector<double>> stepSeconds;
        double quiet;
    };
    const std::vector<Case> cases = {
        {"no repeats", {}, 0.0},
        {"one repeat is its own sum", {{1.0, 2.0, 3.0}}, 6.0},
        {"a slow spell in each repeat falls out", {{9.0, 2.0, 3.0}, {1.0, 2.0, 8.0}}, 6.0},
        {"a cost of the same step in every repeat stays in", {{1.0, 5.0, 1.0}, {1.0, 6.0, 1.0}}, 7.0},
        {"the fastest of three, step by step", {{4.0, 1.0}, {2.0, 3.0}, {3.0, 2.0}}, 3.0},
    };
    for (const Case& c : cases) {
        EXPECT_DOUBLE_EQ(ModelBenchmark::quietSeconds(c.stepSeconds), c.quiet) << c.what;
    }
}

TEST(ModelBenchmarkTest, AModelThePlainLoopDoesNotCoverIsTimedAloneSayingWhy) {
    for (const std::string& preset : {std::string("gemma2"), std::string("qwen3-next")}) {
        const nlohmann::json result = ModelBenchmark::run(smallInModelBenchmark(preset));
        EXPECT_GT(result.at("engine").at("decode_tokens_per_s").get<double>(), 0.0) << preset;
        EXPECT_TRUE(result.at("plain").is_null()) << preset;
        EXPECT_FALSE(result.contains("overhead_percent")) << preset;
        const std::string why = result.at("plain_refused").get<std::string>();
        EXPECT_NE(why.find("the Llama family's math"), std::string::npos) << preset << ": " << why;
    }
}
