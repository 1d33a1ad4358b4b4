// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ConformanceRunner.h"

#include <ATen/ATen.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

using kvscope::cli::ConformanceRunner;
using kvscope::cli::FixtureResult;

namespace {

const std::filesystem::path kFixturesInConformanceRunner = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "conformance";

/// The failures of a run, one line each, for the assertion message.
std::string failures(const std::vector<FixtureResult>& results) {
    std::string text;
    for (const FixtureResult& result : results) {
        if (!result.passed) {
            text += result.file + ": " + result.failure + "\n";
        }
    }
    return text;
}

TEST(ConformanceRunnerTest, CpuRunnerPassesOneFixtureOfEachKind) {
    const ConformanceRunner runner; // the CPU by default, as before devices existed
    for (const char* name :
         {"seed101_random_000_dynamic.json", "seed101_random_005_quantized.json",
          "seed101_random_006_quantized_hqq.json", "seed101_cache_027_StaticCache_hybrid.json",
          "seed101_linear_009_DynamicCache_hybrid.json"}) {
        const FixtureResult result = runner.runFile(kFixturesInConformanceRunner / name);
        EXPECT_TRUE(result.passed) << name << ": " << result.failure;
    }
}

TEST(ConformanceRunnerTest, ExplicitCpuDeviceGivesTheSameResults) {
    const ConformanceRunner runner(c10::Device(c10::kCPU));
    const FixtureResult result = runner.runFile(kFixturesInConformanceRunner / "seed101_random_014_quantized.json");
    EXPECT_TRUE(result.passed) << result.failure;
}

// Every committed fixture with the engine's tensors on the GPU, compared on the CPU.
TEST(ConformanceRunnerTest, CudaRunnerPassesEveryFixture) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    const std::vector<FixtureResult> results =
        ConformanceRunner(c10::Device(c10::kCUDA)).runDirectory(kFixturesInConformanceRunner);
    EXPECT_EQ(results.size(), 360u);
    EXPECT_EQ(failures(results), "");
}

} // namespace

namespace {

const std::filesystem::path kPressFixtures = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "press_conformance";

nlohmann::json pressFixture(const char* name) {
    std::ifstream in(kPressFixtures / name);
    return nlohmann::json::parse(in);
}

TEST(ConformanceRunnerTest, PressFixturesPassWithTheirScoreDeviation) {
    const ConformanceRunner runner;
    for (const char* name : {"seed1_press_009_adakv_snapkv.json", "seed1_press_013_decoding_snapkv.json",
                             "seed2_press_006_expected_attention.json", "seed1_press_007_random.json"}) {
        const FixtureResult result = runner.runFile(kPressFixtures / name);
        EXPECT_TRUE(result.passed) << name << ": " << result.failure;
        ASSERT_TRUE(result.scoreDeviation.has_value()) << name;
        EXPECT_LE(*result.scoreDeviation, 1e-5) << name;
    }
}

TEST(ConformanceRunnerTest, PressFixturesFailOnADifferentScoreOrKeptToken) {
    const ConformanceRunner runner;
    nlohmann::json scores = pressFixture("seed1_press_001_knorm.json");
    scores["cases"][0]["scores"]["data"][3] = scores["cases"][0]["scores"]["data"][3].get<double>() * 1.0001;
    const FixtureResult scored = runner.runFixture(scores, "scores");
    EXPECT_FALSE(scored.passed);
    EXPECT_NE(scored.failure.find("scores: element 3"), std::string::npos) << scored.failure;

    nlohmann::json kept = pressFixture("seed1_press_002_snapkv.json");
    auto& indices = kept["cases"][1]["kept_indices_canonical"]["data"];
    std::swap(indices[0], indices[1]);
    const FixtureResult swapped = runner.runFixture(kept, "kept");
    EXPECT_FALSE(swapped.passed);
    EXPECT_NE(swapped.failure.find("kept (canonical)"), std::string::npos) << swapped.failure;
}

} // namespace
