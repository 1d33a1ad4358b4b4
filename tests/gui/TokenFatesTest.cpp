// SPDX-License-Identifier: GPL-3.0-or-later
// TokenFates: what the cache holds of each token per layer and over the layers, against literal tables of events
// (FateTestSession.h: a chunked layer, a sliding window, a quantized and offloaded layer, a press that drops per KV
// head).
#include "kvscope/gui/models/TokenFates.h"

#include "FateTestSession.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

using F = TokenFate;
using testing::fateTimeline;

TokenFates fatesAt(const trace::Timeline& timeline, std::int64_t step) {
    TokenFates fates;
    fates.update(timeline);
    fates.setState(timeline.stateAt(step), testing::fateChunks);
    return fates;
}

TEST(TokenFatesTest, EachLayersFateOfEachPosition) {
    const trace::Timeline timeline = fateTimeline(false);
    struct Case {
        std::int64_t step;
        int layer;
        std::vector<TokenFate> positions; ///< 0 .. 6
    };
    const std::vector<Case> cases = {
        // The chunk of the newest query (position 5) starts at 4: the first chunk is held but hidden.
        {0, 0, {F::Masked, F::Masked, F::Masked, F::Masked, F::Kept, F::Kept, F::Absent}},
        {0, 1, {F::SlidOut, F::SlidOut, F::Kept, F::Kept, F::Kept, F::Kept, F::Absent}},
        {0, 2, {F::Quantized, F::Quantized, F::Quantized, F::Quantized, F::Kept, F::Kept, F::Absent}},
        {0, 3, {F::Kept, F::PartlyDropped, F::PartlyDropped, F::Kept, F::Dropped, F::Kept, F::Absent}},
        {1, 0, {F::Masked, F::Masked, F::Masked, F::Masked, F::Kept, F::Kept, F::Kept}},
        {1, 1, {F::SlidOut, F::SlidOut, F::SlidOut, F::Kept, F::Kept, F::Kept, F::Kept}},
        {1, 2, {F::Offloaded, F::Offloaded, F::Offloaded, F::Offloaded, F::Offloaded, F::Offloaded, F::Offloaded}},
        {1, 3, {F::Kept, F::PartlyDropped, F::PartlyDropped, F::Kept, F::Dropped, F::Kept, F::Kept}},
        {1, 4, {F::Absent, F::Absent, F::Absent, F::Absent, F::Absent, F::Absent, F::Absent}},
    };
    for (const Case& test : cases) {
        const TokenFates fates = fatesAt(timeline, test.step);
        for (std::size_t position = 0; position < test.positions.size(); ++position) {
            EXPECT_EQ(fates.fateAt(test.layer, static_cast<std::int64_t>(position)), test.positions[position])
                << "step " << test.step << ", layer " << test.layer << ", position " << position;
        }
    }
}

TEST(TokenFatesTest, SummaryOverTheLayersShowsTheMostSevereFate) {
    const trace::Timeline timeline = fateTimeline(false);
    struct Case {
        std::int64_t step;
        std::int64_t position;
        TokenFate shown;
        std::vector<std::pair<TokenFate, int>> counts;
    };
    const std::vector<Case> cases = {
        {1, 4, F::Dropped, {{F::Kept, 2}, {F::Offloaded, 1}, {F::Dropped, 1}}},
        {1, 0, F::SlidOut, {{F::Masked, 1}, {F::SlidOut, 1}, {F::Offloaded, 1}, {F::Kept, 1}}},
        {1, 1, F::PartlyDropped, {{F::Masked, 1}, {F::SlidOut, 1}, {F::Offloaded, 1}, {F::PartlyDropped, 1}}},
        {1, 6, F::Offloaded, {{F::Kept, 3}, {F::Offloaded, 1}}},
        {0, 4, F::Dropped, {{F::Kept, 3}, {F::Dropped, 1}}},
        {0, 2, F::PartlyDropped, {{F::Masked, 1}, {F::Kept, 1}, {F::Quantized, 1}, {F::PartlyDropped, 1}}},
        {0, 5, F::Kept, {{F::Kept, 4}}},
        {0, 6, F::Absent, {{F::Absent, 4}}},
    };
    for (const Case& test : cases) {
        const TokenFates fates = fatesAt(timeline, test.step);
        TokenFateCounts expected;
        for (const auto& [fate, layers] : test.counts) {
            expected.layers[static_cast<std::size_t>(fate)] = layers;
        }
        const TokenFateCounts counts = fates.countsAt(test.position);
        EXPECT_EQ(counts, expected) << "step " << test.step << ", position " << test.position;
        EXPECT_EQ(counts.shown(), test.shown) << "step " << test.step << ", position " << test.position;
        EXPECT_EQ(counts.seen(), test.shown == F::Absent ? 0 : 4);
    }
}

TEST(TokenFatesTest, HeadsThatDroppedAToken) {
    const TokenFates fates = fatesAt(fateTimeline(false), 1);
    EXPECT_EQ(fates.headsDropping(3, 1), (std::pair<int, int>{1, 2}));
    EXPECT_EQ(fates.headsDropping(3, 4), (std::pair<int, int>{2, 2}));
    EXPECT_EQ(fates.headsDropping(3, 0), (std::pair<int, int>{0, 2}));
    EXPECT_EQ(fates.headsDropping(0, 1), (std::pair<int, int>{0, 0})) << "no press decided on layer 0";
}

TEST(TokenFatesTest, SinceWhenATokenHasItsFate) {
    const trace::Timeline timeline = fateTimeline(false);
    const TokenFates fates = fatesAt(timeline, 1);
    struct Case {
        int layer;
        std::int64_t position;
        TokenFate fate;
        std::optional<std::int64_t> since;
    };
    const std::vector<Case> cases = {
        {1, 2, F::SlidOut, 1},   {1, 0, F::SlidOut, 0},  {3, 4, F::Dropped, 0},    {2, 3, F::Offloaded, 1},
        {1, 2, F::Kept, std::nullopt}, {-1, 6, F::Offloaded, 1}, {-1, 0, F::SlidOut, 0}, {0, 6, F::Kept, 1},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(fates.since(timeline, 1, test.layer, test.position, test.fate), test.since)
            << "layer " << test.layer << ", position " << test.position;
    }
}

TEST(TokenFatesTest, AMaskingPressHidesInsteadOfDropping) {
    const TokenFates fates = fatesAt(fateTimeline(true), 1);
    const std::vector<TokenFate> expected = {F::Kept, F::Masked, F::Masked, F::Kept, F::Masked, F::Kept, F::Kept};
    for (std::size_t position = 0; position < expected.size(); ++position) {
        EXPECT_EQ(fates.fateAt(3, static_cast<std::int64_t>(position)), expected[position]) << position;
    }
    EXPECT_EQ(fates.headsDropping(3, 4), (std::pair<int, int>{2, 2}));
}

} // namespace
} // namespace kvscope::gui
