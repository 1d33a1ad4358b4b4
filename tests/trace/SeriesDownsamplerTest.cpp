// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SeriesDownsampler.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>

using namespace kvscope::trace;

namespace {

std::vector<SeriesPoint> randomSeries(std::size_t count, std::uint64_t seed) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> noise(0.0, 10.0);
    std::vector<SeriesPoint> points(count);
    for (std::size_t i = 0; i < count; ++i)
        points[i] = SeriesPoint{static_cast<std::int64_t>(i) + 5, noise(random)};
    return points;
}

bool byValue(const SeriesPoint& a, const SeriesPoint& b) {
    return a.value < b.value;
}

} // namespace

TEST(SeriesDownsamplerTest, SeriesThatFitIsUnchanged) {
    const std::vector<SeriesPoint> points = randomSeries(50, 1);
    EXPECT_EQ(SeriesDownsampler::minMax(points, 50), points);
    EXPECT_EQ(SeriesDownsampler::minMax(points, 1000), points);
    EXPECT_TRUE(SeriesDownsampler::minMax({}, 10).empty());
}

TEST(SeriesDownsamplerTest, DegenerateBudgets) {
    const std::vector<SeriesPoint> points{{0, 1.0}, {1, 9.0}, {2, -3.0}};
    EXPECT_TRUE(SeriesDownsampler::minMax(points, 0).empty());
    EXPECT_EQ(SeriesDownsampler::minMax(points, 1), (std::vector<SeriesPoint>{{1, 9.0}}));
    EXPECT_EQ(SeriesDownsampler::minMax(points, 2), (std::vector<SeriesPoint>{{1, 9.0}, {2, -3.0}}));
}

TEST(SeriesDownsamplerTest, RespectsBudgetKeepsExtremesAndOrder) {
    for (std::size_t count : {101u, 1000u, 32769u}) {
        for (std::size_t budget : {2u, 3u, 10u, 99u, 100u, 1000u}) {
            if (budget >= count)
                continue;
            const std::vector<SeriesPoint> points = randomSeries(count, count + budget);
            const std::vector<SeriesPoint> reduced = SeriesDownsampler::minMax(points, budget);
            ASSERT_LE(reduced.size(), budget);
            ASSERT_GE(reduced.size(), budget / 2);
            // A subset of the input, in step order.
            for (std::size_t i = 0; i < reduced.size(); ++i) {
                const SeriesPoint& point = reduced[i];
                ASSERT_EQ(point, points[static_cast<std::size_t>(point.step - 5)]);
                if (i > 0) {
                    ASSERT_LT(reduced[i - 1].step, point.step);
                }
            }
            EXPECT_EQ(std::max_element(reduced.begin(), reduced.end(), byValue)->value,
                      std::max_element(points.begin(), points.end(), byValue)->value);
            EXPECT_EQ(std::min_element(reduced.begin(), reduced.end(), byValue)->value,
                      std::min_element(points.begin(), points.end(), byValue)->value);
        }
    }
}

TEST(SeriesDownsamplerTest, IsolatedSpikesSurvive) {
    // A flat series with a few one-sample spikes: averaging or striding would lose them.
    std::vector<SeriesPoint> points(10000);
    for (std::size_t i = 0; i < points.size(); ++i)
        points[i] = SeriesPoint{static_cast<std::int64_t>(i), 1.0};
    for (std::size_t spike : {17u, 4243u, 9998u})
        points[spike].value = 50.0;
    points[6001].value = -20.0;

    const std::vector<SeriesPoint> reduced = SeriesDownsampler::minMax(points, 64);
    EXPECT_LE(reduced.size(), 64u);
    for (std::int64_t spike : {17, 4243, 9998, 6001}) {
        EXPECT_TRUE(std::any_of(reduced.begin(), reduced.end(),
                                [&](const SeriesPoint& p) {
                                    return p.step == spike &&
                                           p.value == points[static_cast<std::size_t>(spike)].value;
                                }))
            << "spike at " << spike;
    }
}

TEST(SeriesDownsamplerTest, FlatBucketsGiveOnePointEach) {
    std::vector<SeriesPoint> points(1000, SeriesPoint{0, 7.0});
    for (std::size_t i = 0; i < points.size(); ++i)
        points[i].step = static_cast<std::int64_t>(i);
    const std::vector<SeriesPoint> reduced = SeriesDownsampler::minMax(points, 20);
    EXPECT_EQ(reduced.size(), 10u);
    for (const SeriesPoint& point : reduced)
        EXPECT_EQ(point.value, 7.0);
}
