// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SeriesColumns.h"

#include <gtest/gtest.h>
#include <limits>

using namespace kvscope::trace;

namespace {

// A state of `layers` layers whose seq_length is `seq` for layer 0 and residual `residual` for layer 1.
StepState state(std::size_t layers, std::int64_t seq, std::int64_t residual, std::int64_t host,
                std::int64_t wall) {
    StepState result;
    result.layers.resize(layers);
    result.layers[0].seqLength = seq;
    if (layers > 1) {
        result.layers[1].residualTokens = residual;
        result.layers[1].seqLength = 2 * seq;
    }
    result.memoryHost = host;
    result.wallNs = wall;
    return result;
}

/// The literal table of the five steps both tests below make (record() state by state, append() block by block).
void expectTheLiteralTable(const SeriesColumns& columns) {
    ASSERT_EQ(columns.size(), 5);
    EXPECT_EQ(*columns.values(0, SeriesField::SeqLength, 0, 4), (std::vector<double>{5, 6, 7, 8, 9}));
    EXPECT_EQ(*columns.values(1, SeriesField::SeqLength, 0, 4), (std::vector<double>{0, 0, 14, 16, 18}));
    EXPECT_EQ(*columns.values(1, SeriesField::ResidualTokens, 1, 4), (std::vector<double>{0, 0, 4, 0}));
    EXPECT_EQ(*columns.values(-1, SeriesField::SeqLength, 1, 3), (std::vector<double>{6, 21, 24}));
    EXPECT_EQ(*columns.values(0, SeriesField::QuantizedTokens, 0, 1), (std::vector<double>{0, 0}));
    EXPECT_EQ(*columns.values(-1, SeriesField::BytesHost, 2, 4), (std::vector<double>{200, 300, 400}));
    EXPECT_EQ(*columns.values(1, SeriesField::WallNs, 3, 4), (std::vector<double>{13, 14})) << "wall: any layer";
}

} // namespace

TEST(SeriesColumnsTest, HoldsTokenFieldsPerLayerAndCacheWideFieldsAgainstALiteralTable) {
    SeriesColumns columns;
    // Layer 1 appears at step 2, and its residual is first non-zero at step 3: zeros before are implied.
    columns.record(state(1, 5, 0, 0, 10));
    columns.record(state(1, 6, 0, 100, 11));
    columns.record(state(2, 7, 0, 200, 12));
    columns.record(state(2, 8, 4, 300, 13));
    columns.record(state(2, 9, 0, 400, 14));
    expectTheLiteralTable(columns);
    // Not held: per-layer bytes (a timeline folds frames for them) and ranges outside the columns.
    EXPECT_FALSE(columns.values(0, SeriesField::BytesHost, 0, 4));
    EXPECT_FALSE(columns.values(0, SeriesField::SeqLength, 3, 5));
    EXPECT_FALSE(columns.values(0, SeriesField::SeqLength, -1, 2));
    EXPECT_GT(columns.memoryBytes(), 0u);
}

TEST(SeriesColumnsTest, AValueBeyondThirtyTwoBitsGivesUpTheTokenColumns) {
    SeriesColumns columns;
    columns.record(state(1, 5, 0, 0, 0));
    columns.record(state(1, std::int64_t{1} << 40, 0, 0, 0));
    EXPECT_FALSE(columns.values(0, SeriesField::SeqLength, 0, 1)) << "never a truncated value";
    EXPECT_TRUE(columns.values(-1, SeriesField::WallNs, 0, 1));
}

TEST(SeriesColumnsTest, AppendingWholeColumnsGivesTheLiteralTableRecordGives) {
    // The table above, appended in two blocks of columns (steps 0-1 with one layer, steps 2-4 with two): layer 1
    // appears in the second block, its residual column is empty in the first and non-zero only at step 3, layer
    // 0's quantized column is empty in both.
    SeriesColumns columns;
    columns.append(2, {{{0, 0}, {0, 0}, {0, 100}, {10, 11}}}, {{{{5, 6}}, {{}}, {{}}, {{}}, {{}}}});
    columns.append(3, {{{0, 0, 0}, {0, 0, 0}, {200, 300, 400}, {12, 13, 14}}},
                   {{{{7, 8, 9}, {14, 16, 18}}, {{}, {}}, {{}, {}}, {{}, {0, 4, 0}}, {{}, {}}}});
    expectTheLiteralTable(columns);
    // A column already begun takes zeros for a block that has none of it; record() goes on after append().
    columns.append(1, {{{0}, {0}, {500}, {15}}}, {{{{10}, {}}, {{}, {}}, {{}, {}}, {{}, {}}, {{}, {}}}});
    columns.record(state(2, 11, 2, 600, 16));
    EXPECT_EQ(*columns.values(1, SeriesField::ResidualTokens, 3, 6), (std::vector<double>{4, 0, 0, 2}));
    EXPECT_EQ(*columns.values(1, SeriesField::SeqLength, 4, 6), (std::vector<double>{18, 0, 22}));
    EXPECT_EQ(*columns.values(-1, SeriesField::WallNs, 5, 6), (std::vector<double>{15, 16}));
}
