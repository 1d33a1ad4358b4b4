// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ConformanceRunner.h"

#include <ATen/ATen.h>
#include <filesystem>
#include <gtest/gtest.h>

using kvscope::cli::ConformanceRunner;
using kvscope::cli::FixtureResult;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "conformance";

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
        const FixtureResult result = runner.runFile(kFixtures / name);
        EXPECT_TRUE(result.passed) << name << ": " << result.failure;
    }
}

TEST(ConformanceRunnerTest, ExplicitCpuDeviceGivesTheSameResults) {
    const ConformanceRunner runner(c10::Device(c10::kCPU));
    const FixtureResult result = runner.runFile(kFixtures / "seed101_random_014_quantized.json");
    EXPECT_TRUE(result.passed) << result.failure;
}

// Every committed fixture with the engine's tensors on the GPU, compared on the CPU.
TEST(ConformanceRunnerTest, CudaRunnerPassesEveryFixture) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    const std::vector<FixtureResult> results =
        ConformanceRunner(c10::Device(c10::kCUDA)).runDirectory(kFixtures);
    EXPECT_EQ(results.size(), 360u);
    EXPECT_EQ(failures(results), "");
}

} // namespace
