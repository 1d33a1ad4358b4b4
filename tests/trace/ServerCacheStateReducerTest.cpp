// SPDX-License-Identifier: GPL-3.0-or-later
// ServerCacheStateReducer: an attached server's events folded into its cache, against literal tables.
#include "kvscope/trace/ServerCacheStateReducer.h"
#include "kvscope/trace/StateReducer.h"

#include <gtest/gtest.h>

namespace kvscope::trace {
namespace {

Event serverAt(std::int64_t step, EventPayload payload) { return Event{step, -1, 0, std::move(payload)}; }

ServerCacheEvent serverStored(std::vector<std::uint64_t> hashes, std::optional<std::uint64_t> parent,
                        std::vector<std::int64_t> tokens, std::string medium = "GPU", std::int32_t group = 0,
                        std::string text = {}, std::vector<std::int64_t> pieceEnds = {}) {
    return ServerCacheEvent{ServerCacheChange::Stored, parent.has_value(), group, std::move(hashes), parent.value_or(0),
                            std::move(tokens), 2, std::move(medium), std::move(text), std::move(pieceEnds)};
}

ServerCacheEvent serverRemoved(std::vector<std::uint64_t> hashes, std::string medium = "GPU") {
    return ServerCacheEvent{ServerCacheChange::Removed, false, 0, std::move(hashes), 0, {}, 0, std::move(medium), "", {}};
}

TEST(ServerCacheStateReducerTest, StoredBlocksChainTheirParentsAndSplitTokensAndText) {
    ServerCacheState state;
    ServerCacheStateReducer::apply(state, serverAt(3, serverStored({100, 101}, std::nullopt, {1, 2, 3, 4}, "GPU", 0, "A Bc D",
                                                       {1, 3, 4, 6})));
    ASSERT_TRUE(state.active);
    ASSERT_EQ(state.blocks.size(), 2U);
    const ServerBlockState& first = state.blocks.at({"GPU", 100});
    const ServerBlockState& second = state.blocks.at({"GPU", 101});
    // Literal: block 0 holds tokens 1, 2 ("A B"), block 1 tokens 3, 4 ("c D") under block 0.
    EXPECT_FALSE(first.hasParent);
    EXPECT_EQ(first.tokenIds, (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(first.text, "A B");
    EXPECT_TRUE(second.hasParent);
    EXPECT_EQ(second.parentHash, 100U);
    EXPECT_EQ(second.tokenIds, (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(second.text, "c D");
    EXPECT_EQ(second.storedStep, 3);
    EXPECT_EQ(first.storedIndex, 0);
    EXPECT_EQ(second.storedIndex, 1);
    EXPECT_EQ(state.storedBlocks, 2);
}

TEST(ServerCacheStateReducerTest, RemovalIsPerMediumAndClearingEmptiesEverything) {
    ServerCacheState state;
    ServerCacheStateReducer::apply(state, serverAt(0, serverStored({7}, 5, {1, 2}, "GPU")));
    ServerCacheStateReducer::apply(state, serverAt(1, serverStored({7}, 5, {1, 2}, "CPU")));
    ASSERT_EQ(state.blocks.size(), 2U);
    ServerCacheStateReducer::apply(state, serverAt(2, serverRemoved({7, 99}, "GPU"))); // 99 was never held
    EXPECT_EQ(state.blocks.size(), 1U);
    EXPECT_TRUE(state.blocks.contains({"CPU", 7}));
    EXPECT_EQ(state.removedBlocks, 1);
    ServerCacheStateReducer::apply(state, serverAt(3, ServerCacheEvent{ServerCacheChange::Cleared, false, 0, {}, 0, {}, 0, "", "", {}}));
    EXPECT_TRUE(state.blocks.empty());
    EXPECT_EQ(state.clears, 1);
    EXPECT_EQ(state.storedBlocks, 2);
}

TEST(ServerCacheStateReducerTest, TextThatDoesNotFitItsTokensIsLeftOutAndShortTokensStayShort) {
    ServerCacheState state;
    // pieceEnds past the text (a damaged or hostile event): no text, tokens still split.
    ServerCacheStateReducer::apply(state, serverAt(0, serverStored({1, 2}, std::nullopt, {5, 6, 7}, "GPU", 0, "ab", {1, 2, 9})));
    EXPECT_EQ(state.blocks.at({"GPU", 1}).text, "ab");
    EXPECT_EQ(state.blocks.at({"GPU", 2}).text, "");
    EXPECT_EQ(state.blocks.at({"GPU", 2}).tokenIds, (std::vector<std::int64_t>{7}));
}

TEST(ServerCacheStateReducerTest, StatusCarriesTheStreamsCountersAndTheStepStateFoldsBoth) {
    StepState step;
    StateReducer::apply(step, serverAt(0, serverStored({1}, std::nullopt, {5, 6})));
    StateReducer::apply(step, serverAt(0, ServerStatusEvent{12, 3.25, true, 13, 2, 1, 317, 128}));
    EXPECT_TRUE(step.server.active);
    EXPECT_EQ(step.server.blocks.size(), 1U);
    EXPECT_EQ(step.server.messageSequence, 12U);
    EXPECT_EQ(step.server.messages, 13);
    EXPECT_EQ(step.server.lostMessages, 2);
    EXPECT_EQ(step.server.refusedMessages, 1);
    EXPECT_EQ(step.server.prefixCacheQueries, 317);
    EXPECT_EQ(step.server.prefixCacheHits, 128);
    EXPECT_TRUE(step.layers.empty()) << "server events change no layer";
}

} // namespace
} // namespace kvscope::trace
