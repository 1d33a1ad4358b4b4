// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/synthetic/TimelineBenchmark.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdexcept>

using namespace kvscope::synthetic;

TEST(TimelineBenchmarkTest, ReportsTheSessionAndSaneTimings) {
    const TimelineBenchmarkResult result = TimelineBenchmark::run(4, 500, 50, 3);
    EXPECT_EQ(result.layers, 4);
    EXPECT_EQ(result.tokens, 500);
    EXPECT_EQ(result.queries, 50);
    // Per step at least StepBegin, StepEnd, Memory and MaskSizes + Update per layer.
    EXPECT_GE(result.events, 501u * (3 + 2 * 4));
    EXPECT_GE(result.stateMsMedian, 0.0);
    EXPECT_GE(result.stateMsMax, result.stateMsMedian);
    EXPECT_GT(result.timelineBytes, 0u);
    EXPECT_GT(result.keyframeInterval, 0);
}

TEST(TimelineBenchmarkTest, JsonHasExactlyTheCliKeys) {
    TimelineBenchmarkResult result;
    result.layers = 32;
    result.tokens = 32768;
    result.events = 123;
    result.stateMsMedian = 0.5;
    result.stateMsMax = 1.5;
    const nlohmann::json json = nlohmann::json::parse(TimelineBenchmark::toJson(result));
    ASSERT_TRUE(json.is_object());
    EXPECT_EQ(json.size(), 5u);
    EXPECT_EQ(json.at("layers"), 32);
    EXPECT_EQ(json.at("tokens"), 32768);
    EXPECT_EQ(json.at("events"), 123);
    EXPECT_EQ(json.at("state_ms_median"), 0.5);
    EXPECT_EQ(json.at("state_ms_max"), 1.5);
}

TEST(TimelineBenchmarkTest, RejectsEmptyWorkloads) {
    EXPECT_THROW(TimelineBenchmark::run(0, 10), std::invalid_argument);
    EXPECT_THROW(TimelineBenchmark::run(2, -1), std::invalid_argument);
    EXPECT_THROW(TimelineBenchmark::run(2, 10, 0), std::invalid_argument);
}
