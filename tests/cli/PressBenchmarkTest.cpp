// SPDX-License-Identifier: GPL-3.0-or-later
// `bench press`: every phase of press is timed on the workload it claims, and bad options are refused
// naming what is allowed. Timings themselves are not asserted (tests/bench has the measured figures).
#include "kvscope/cli/PressBenchmark.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace {

using kvscope::cli::PressBenchmark;
using kvscope::cli::PressBenchmarkOptions;

PressBenchmarkOptions smallInPressBenchmark(const std::string& press) {
    PressBenchmarkOptions options;
    options.press = press;
    options.tokens = 96;
    options.heads = 4;
    options.keyValueHeads = 2;
    options.headDim = 16;
    options.repeats = 3;
    return options;
}

TEST(PressBenchmarkTest, PrefillPressesCompressThePromptAndCompareWithItsAttention) {
    for (const std::string press : {"snapkv", "knorm", "observed_attention", "tova", "adakv"}) {
        PressBenchmarkOptions options = smallInPressBenchmark(press);
        options.ratio = 0.25;
        if (press == "snapkv") {
            options.pressOptions = {"window_size=8"};
        } else if (press == "adakv") {
            options.pressOptions = {"base=snapkv", "window_size=8"};
        }
        const nlohmann::json result = PressBenchmark::run(options);
        EXPECT_EQ(result["phase"], "prefill") << press;
        EXPECT_EQ(result["press"], press);
        EXPECT_EQ(result["kept"], 72) << press << ": int(96 * 0.75)";
        EXPECT_GT(result["compression_ms"].get<double>(), 0.0) << press;
        EXPECT_GT(result["attention_ms"].get<double>(), 0.0) << press;
        EXPECT_DOUBLE_EQ(result["share_of_attention"].get<double>(),
                         result["compression_ms"].get<double>() / result["attention_ms"].get<double>());
    }
}

TEST(PressBenchmarkTest, DecodingPressIsTimedPerStepOverOneInterval) {
    PressBenchmarkOptions options = smallInPressBenchmark("decoding");
    options.pressOptions = {"compression_interval=16", "base=snapkv", "window_size=8"};
    const nlohmann::json result = PressBenchmark::run(options);
    EXPECT_EQ(result["phase"], "decoding");
    EXPECT_EQ(result["steps"], 16);
    EXPECT_EQ(result["cached"], 96) << "the target size defaults to --tokens";
    EXPECT_EQ(result["compressions"], 1) << "one compression per interval";
    EXPECT_GT(result["decode_step_ms"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(result["share_of_decode_step"].get<double>(),
                     result["press_ms_per_step"].get<double>() / result["decode_step_ms"].get<double>());
}

TEST(PressBenchmarkTest, HeavyHittersEvictOneSlotEveryStepAtTheirBudget) {
    PressBenchmarkOptions options = smallInPressBenchmark("h2o");
    options.pressOptions = {"budget=32", "recent_window=8"};
    options.repeats = 5;
    const nlohmann::json result = PressBenchmark::run(options);
    EXPECT_EQ(result["cached"], 32);
    EXPECT_EQ(result["steps"], 5);
    EXPECT_EQ(result["compressions"], 5);
}

TEST(PressBenchmarkTest, RefusesWhatItCannotTimeNamingTheAllowedValues) {
    PressBenchmarkOptions unknown = smallInPressBenchmark("squeeze");
    try {
        PressBenchmark::run(unknown);
        FAIL() << "an unknown press was timed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("allowed: "), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("snapkv"), std::string::npos) << error.what();
    }
    PressBenchmarkOptions ratio = smallInPressBenchmark("snapkv");
    ratio.ratio = 1.0;
    EXPECT_THROW(PressBenchmark::run(ratio), std::invalid_argument);
    PressBenchmarkOptions option = smallInPressBenchmark("snapkv");
    option.pressOptions = {"window_size"};
    EXPECT_THROW(PressBenchmark::run(option), std::invalid_argument);
    PressBenchmarkOptions heads = smallInPressBenchmark("snapkv");
    heads.keyValueHeads = 3;
    EXPECT_THROW(PressBenchmark::run(heads), std::invalid_argument);
}

} // namespace
