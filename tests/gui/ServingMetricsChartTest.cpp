// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/ServingMetricsChart.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/session/ViewSelection.h"

namespace kvscope::gui {
namespace {

using Metric = ServingMetricsChart::Metric;

std::vector<double> valuesOf(const ServingMetricsChart& chart, int series) {
    std::vector<double> values;
    for (const trace::SeriesPoint& point : chart.series(series, 0, 100)) {
        values.push_back(point.value);
    }
    return values;
}

std::vector<std::int64_t> stepsOf(const ServingMetricsChart& chart, int series) {
    std::vector<std::int64_t> steps;
    for (const trace::SeriesPoint& point : chart.series(series, 0, 100)) {
        steps.push_back(point.step);
    }
    return steps;
}

TEST(ServingMetricsChartTest, TheDesignDocumentExamplesMetrics) {
    SessionController session;
    ViewSelection selection;
    ServingMetricsChart usage(session, selection, Metric::PoolUsage);
    ServingMetricsChart hits(session, selection, Metric::HitRate);
    ServingMetricsChart evictions(session, selection, Metric::Evictions);
    ServingMetricsChart tokens(session, selection, Metric::TokensPerStep);
    EXPECT_TRUE(usage.series(0, 0, 100).empty());
    session.setRecordedSession({}, testing::designExample(), "example");
    EXPECT_EQ(valuesOf(usage, 0), (std::vector<double>{4, 4, 5, 0, 0, 0}));
    EXPECT_EQ(valuesOf(usage, 1), (std::vector<double>(6, 10)));
    // Hit rate: 8 of r1's 14 tokens at step 4, 12 of r2's 29 at step 5; cumulatively 8 / 29 and 20 / 58.
    const std::vector<double> cumulative = valuesOf(hits, 0);
    ASSERT_EQ(cumulative.size(), 6u);
    EXPECT_DOUBLE_EQ(cumulative[0], 0.0);
    EXPECT_DOUBLE_EQ(cumulative[4], 100.0 * 8 / 29);
    EXPECT_DOUBLE_EQ(cumulative[5], 100.0 * 20 / 58);
    EXPECT_EQ(stepsOf(hits, 1), (std::vector<std::int64_t>{0, 4, 5}))
        << "per step only where requests were admitted";
    EXPECT_DOUBLE_EQ(valuesOf(hits, 1)[1], 100.0 * 8 / 14);
    EXPECT_EQ(valuesOf(evictions, 0), (std::vector<double>{0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(valuesOf(evictions, 1), (std::vector<double>(6, 0)));
    EXPECT_EQ(valuesOf(tokens, 0), (std::vector<double>{15, 1, 1, 1, 6, 17}));
    EXPECT_EQ(valuesOf(tokens, 1), (std::vector<double>(6, 64)));
    EXPECT_EQ(stepsOf(tokens, 0), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(tokens.series(0, 2, 3).size(), 2u);
}

// The last step's value is drawn a whole step wide, beside the step cursor (which sits on the last step
// while a live session runs), not as a sliver under it at the plot's right edge.
TEST(ServingMetricsChartTest, TheLastStepShowsBesideTheCursor) {
    SessionController session;
    ViewSelection selection;
    ServingMetricsChart tokens(session, selection, Metric::TokensPerStep);
    tokens.resize(600, 250);
    session.setRecordedSession({}, testing::designExample(), "example");
    session.goToEnd();
    tokens.replot();
    EXPECT_DOUBLE_EQ(tokens.xAxis->range().upper, 6.0) << "steps 0..5, and the last one's width";
    const QCPGraph* computed = tokens.graph(0);
    ASSERT_EQ(computed->dataCount(), 7);
    EXPECT_DOUBLE_EQ(computed->data()->at(6)->key, 6.0);
    EXPECT_DOUBLE_EQ(computed->data()->at(6)->value, 17.0) << "r2's 17 tokens at step 5, held to its end";
    const double cursor = tokens.xAxis->coordToPixel(5.0);
    const double end = tokens.xAxis->coordToPixel(6.0);
    EXPECT_GT(end - cursor, 20.0) << "a step's width of stair right of the 2-pixel cursor";
    // The per-step hit rate is points, not stairs: nothing is added after the last one.
    ServingMetricsChart hits(session, selection, Metric::HitRate);
    hits.resize(600, 250);
    EXPECT_EQ(hits.graph(1)->dataCount(), 3);
}

TEST(ServingMetricsChartTest, PreemptionsAreCounted) {
    SessionController session;
    ViewSelection selection;
    ServingMetricsChart evictions(session, selection, Metric::Evictions);
    session.setRecordedSession({}, testing::preemption(), "preemption");
    const std::vector<double> preemptions = valuesOf(evictions, 1);
    ASSERT_GT(preemptions.size(), 5u);
    EXPECT_EQ(preemptions[5], 1);
    EXPECT_EQ(valuesOf(evictions, 0)[5], 1);
}

} // namespace
} // namespace kvscope::gui
