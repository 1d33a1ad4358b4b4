// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/LogitsComparison.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvscope::gui {
namespace {

// complete: probabilities indexed by token id (ids ignored, as in session files); else a top-k list.
trace::LogitsEvent distribution(std::vector<std::int64_t> ids, std::vector<double> probabilities, bool complete) {
    trace::LogitsEvent logits;
    if (!complete) {
        logits.tokenIds = std::move(ids);
    }
    for (const double p : probabilities) {
        logits.logProbs.push_back(static_cast<float>(std::log(p)));
    }
    logits.complete = complete;
    return logits;
}

TEST(LogitsComparisonTest, KlDivergenceOfCompleteDistributions) {
    const auto p = distribution({0, 1}, {0.5, 0.5}, true);
    const auto q = distribution({0, 1}, {0.9, 0.1}, true);
    const double expected = 0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1);
    EXPECT_NEAR(LogitsComparison::klDivergence(p, q), expected, 1e-6);
    EXPECT_NEAR(LogitsComparison::klDivergence(p, p), 0.0, 1e-9);
    // A top-k list in another order is matched by id against the complete one.
    const auto reordered = distribution({1, 0}, {0.1, 0.9}, false);
    EXPECT_NEAR(LogitsComparison::klDivergence(p, reordered), expected, 1e-6);
}

TEST(LogitsComparisonTest, TopKListsUseTheFloorForMissingTokens) {
    const auto p = distribution({5, 6}, {0.6, 0.3}, false);
    const auto q = distribution({5, 7}, {0.6, 0.2}, false);
    // Token 6 is not in q's list: it takes q's smallest listed probability, 0.2.
    const double expected = 0.6 * std::log(0.6 / 0.6) + 0.3 * std::log(0.3 / 0.2);
    EXPECT_NEAR(LogitsComparison::klDivergence(p, q), expected, 1e-6);
    EXPECT_EQ(LogitsComparison::klDivergence(p, trace::LogitsEvent{}), 0.0);
}

TEST(LogitsComparisonTest, TopOneAgreement) {
    EXPECT_TRUE(LogitsComparison::top1Agrees(distribution({1, 2}, {0.7, 0.3}, false),
                                             distribution({2, 1}, {0.4, 0.6}, false)));
    EXPECT_FALSE(LogitsComparison::top1Agrees(distribution({1, 2}, {0.7, 0.3}, false),
                                              distribution({1, 2}, {0.3, 0.7}, false)));
    // Complete distributions: the id is the index.
    EXPECT_TRUE(LogitsComparison::top1Agrees(distribution({}, {0.1, 0.9}, true), distribution({2, 1}, {0.4, 0.6}, false)));
    EXPECT_FALSE(LogitsComparison::top1Agrees(trace::LogitsEvent{}, trace::LogitsEvent{}));
}

void addStep(trace::Timeline& timeline, std::int64_t step, std::int64_t token, const trace::LogitsEvent& logits) {
    timeline.emit(trace::Event{step, -1, 0, trace::StepBeginEvent{}});
    timeline.emit(trace::Event{step, -1, 0, logits});
    timeline.emit(trace::Event{step, -1, 0, trace::StepEndEvent{token, "x", 1}});
}

TEST(LogitsComparisonTest, ComparesTimelinesStepByStep) {
    trace::Timeline a;
    trace::Timeline b;
    const auto sure = distribution({10, 11}, {0.9, 0.1}, false);
    const auto unsure = distribution({10, 11}, {0.4, 0.6}, false);
    addStep(a, 0, 10, sure);
    addStep(b, 0, 10, sure);
    addStep(a, 1, 10, sure);
    addStep(b, 1, 11, unsure);
    addStep(a, 2, 10, sure); // b has no step 2: only common steps are compared
    const std::vector<StepComparison> steps = LogitsComparison::compare(a, b);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_TRUE(steps[0].hasLogits);
    EXPECT_TRUE(steps[0].top1Agrees);
    EXPECT_NEAR(steps[0].klDivergence, 0.0, 1e-9);
    EXPECT_FALSE(steps[1].top1Agrees);
    EXPECT_GT(steps[1].klDivergence, 0.1);
    EXPECT_EQ(steps[1].tokenA, 10);
    EXPECT_EQ(steps[1].tokenB, 11);
    EXPECT_EQ(LogitsComparison::firstDivergentStep(steps), 1);
    EXPECT_EQ(LogitsComparison::firstDivergentStep({steps[0]}), -1);
}

} // namespace
} // namespace kvscope::gui
