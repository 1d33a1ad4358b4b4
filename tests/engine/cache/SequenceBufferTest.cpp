// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/SequenceBuffer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;

TEST(SequenceBufferTest, StartsWithoutShape) {
    SequenceBuffer buffer;
    EXPECT_FALSE(buffer.hasShape());
    EXPECT_EQ(buffer.length(), 0);
    EXPECT_FALSE(buffer.view().defined());
    EXPECT_EQ(buffer.bytes(), 0);
}

TEST(SequenceBufferTest, FirstAppendCopiesTheStates) {
    SequenceBuffer buffer;
    at::Tensor input = states({1, 2, 3});
    at::Tensor view = buffer.append(input);
    input.fill_(7); // the buffer holds its own copy
    EXPECT_TRUE(buffer.hasShape());
    EXPECT_EQ(buffer.length(), 3);
    EXPECT_EQ(values(view), (Values{1, 2, 3}));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
    EXPECT_EQ(view.sizes(), (at::IntArrayRef{1, 1, 3, 1}));
}

TEST(SequenceBufferTest, FirstAppendLeavesRoomForTheStepsAfterAPrompt) {
    // Room for max(16, tokens / 8) more: a prompt's first steps append in place, the next one moves.
    struct Case {
        int64_t prompt;
        int64_t room;
    };
    for (const Case c : {Case{1, 16}, Case{64, 16}, Case{200, 25}, Case{2048, 256}}) {
        SequenceBuffer buffer;
        buffer.append(at::zeros({1, 2, c.prompt, 4}));
        EXPECT_EQ(buffer.storage().size(2), c.prompt + c.room) << c.prompt;
        const void* storage = buffer.storage().data_ptr();
        for (int64_t step = 0; step < c.room; ++step) {
            buffer.append(at::full({1, 2, 1, 4}, static_cast<float>(step)));
        }
        EXPECT_EQ(buffer.storage().data_ptr(), storage) << c.prompt;
        EXPECT_EQ(buffer.view().select(2, c.prompt + c.room - 1).max().item<float>(), static_cast<float>(c.room - 1));
        buffer.append(at::zeros({1, 2, 1, 4}));
        EXPECT_NE(buffer.storage().data_ptr(), storage) << c.prompt;
        EXPECT_EQ(buffer.length(), c.prompt + c.room + 1);
    }
}

TEST(SequenceBufferTest, AppendGrowsInOrderPastManyReallocations) {
    SequenceBuffer buffer;
    Values expected;
    for (int token = 1; token <= 100; ++token) {
        at::Tensor view = buffer.append(states({static_cast<float>(token)}));
        expected.push_back(static_cast<float>(token));
        ASSERT_EQ(buffer.length(), token);
        ASSERT_EQ(values(view), expected);
    }
    EXPECT_EQ(values(buffer.view()), expected);
}

TEST(SequenceBufferTest, AppendOfSeveralTokensAcrossHeadsAndBatch) {
    SequenceBuffer buffer;
    // [batch 2, heads 2, tokens 1, head_dim 2]: element (b, h, t, d) = 1000 b + 100 h + 10 t + d.
    auto make = [](int firstToken, int tokens) {
        at::Tensor t = at::empty({2, 2, tokens, 2});
        for (int b = 0; b < 2; ++b)
            for (int h = 0; h < 2; ++h)
                for (int s = 0; s < tokens; ++s)
                    for (int d = 0; d < 2; ++d)
                        t[b][h][s][d] = 1000 * b + 100 * h + 10 * (firstToken + s) + d;
        return t;
    };
    buffer.append(make(0, 1));
    buffer.append(make(1, 3));
    at::Tensor view = buffer.append(make(4, 2));
    EXPECT_TRUE(at::equal(view, make(0, 6)));
    EXPECT_EQ(buffer.bytes(), 6 * 2 * 2 * 2 * static_cast<int64_t>(sizeof(float)));
}

TEST(SequenceBufferTest, EarlierViewsKeepTheirValuesAfterLaterAppends) {
    SequenceBuffer buffer;
    std::vector<at::Tensor> views;
    for (int token = 1; token <= 40; ++token) {
        views.push_back(buffer.append(states({static_cast<float>(token)})));
    }
    for (size_t i = 0; i < views.size(); ++i) {
        Values expected;
        for (size_t token = 1; token <= i + 1; ++token) {
            expected.push_back(static_cast<float>(token));
        }
        EXPECT_EQ(values(views[i]), expected) << "view handed out after append " << i + 1;
    }
}

TEST(SequenceBufferTest, KeepLastDropsTheOldestTokens) {
    SequenceBuffer buffer;
    buffer.append(rangeStates(1, 5));
    buffer.keepLast(2);
    EXPECT_EQ(buffer.length(), 2);
    EXPECT_EQ(values(buffer.view()), (Values{4, 5}));
    buffer.append(states({6}));
    EXPECT_EQ(values(buffer.view()), (Values{4, 5, 6}));
    buffer.keepLast(10); // more than held: keeps everything
    EXPECT_EQ(values(buffer.view()), (Values{4, 5, 6}));
    buffer.keepLast(0);
    EXPECT_EQ(buffer.length(), 0);
    EXPECT_TRUE(buffer.hasShape());
}

TEST(SequenceBufferTest, KeepLastLeavesEarlierViewsAlone) {
    SequenceBuffer buffer;
    at::Tensor before = buffer.append(rangeStates(1, 4));
    for (int token = 5; token <= 30; ++token) {
        buffer.append(states({static_cast<float>(token)}));
        buffer.keepLast(3);
    }
    EXPECT_EQ(values(buffer.view()), (Values{28, 29, 30}));
    EXPECT_EQ(values(before), (Values{1, 2, 3, 4}));
}

TEST(SequenceBufferTest, KeepingFewOfALongPromptMovesThemToRoomOfTheirSize) {
    // A sliding window of 512 after a 2048-token prompt: its 511 tokens move to 511 + 63 rows, the prompt's
    // 2304-row allocation stays only with the view handed out; keeping most of an allocation moves nothing.
    SequenceBuffer buffer;
    const at::Tensor prompt = at::arange(2048, at::kFloat).reshape({1, 1, 2048, 1}).expand({1, 2, 2048, 4});
    const at::Tensor full = buffer.append(prompt);
    ASSERT_EQ(buffer.storage().size(2), 2048 + 256);
    buffer.keepLast(511);
    EXPECT_EQ(buffer.storage().size(2), 511 + 63);
    EXPECT_TRUE(buffer.view().equal(prompt.narrow(2, 2048 - 511, 511)));
    EXPECT_TRUE(full.equal(prompt));
    const void* storage = buffer.storage().data_ptr();
    for (int64_t step = 0; step < 63; ++step) {
        buffer.append(at::full({1, 2, 1, 4}, 2048.0f + static_cast<float>(step)));
        buffer.keepLast(511);
    }
    EXPECT_EQ(buffer.storage().data_ptr(), storage);
    EXPECT_EQ(buffer.view().select(2, 510).max().item<float>(), 2048.0f + 62.0f);
    EXPECT_EQ(buffer.view().select(2, 0).max().item<float>(), 2048.0f - 511.0f + 63.0f);
}

TEST(SequenceBufferTest, TruncateKeepsTheFirstTokens) {
    SequenceBuffer buffer;
    buffer.append(rangeStates(1, 5));
    buffer.truncate(3);
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
    buffer.truncate(7); // more than held: unchanged
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
    buffer.append(states({9}));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3, 9}));
    buffer.truncate(-1); // clamps to empty
    EXPECT_EQ(buffer.length(), 0);
}

TEST(SequenceBufferTest, ViewHandedOutBeforeTruncateKeepsItsValuesAfterAppend) {
    // The header promises that views handed out stay valid because storage is never overwritten below
    // the write position; truncate() moves the write position back inside an earlier view.
    SequenceBuffer buffer;
    at::Tensor before = buffer.append(rangeStates(1, 4));
    buffer.truncate(2);
    buffer.append(states({9}));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 9}));
    EXPECT_EQ(values(before), (Values{1, 2, 3, 4}));
}

TEST(SequenceBufferTest, ShapeMismatchIsRefusedAndLeavesTheBufferUnchanged) {
    SequenceBuffer buffer;
    buffer.append(rangeStates(1, 2));
    EXPECT_TRUE(refuses(
        [&] {
            buffer.append(at::zeros({1, 2, 1, 1}));
        },
        ErrorKind::Runtime, {"Sizes of tensors must match", "[1, 2, 1, 1]"}));
    EXPECT_TRUE(refuses(
        [&] {
            buffer.append(at::zeros({1, 1, 1, 3}));
        },
        ErrorKind::Runtime, {"[1, 1, 1, 3]"}));
    EXPECT_TRUE(refuses(
        [&] {
            buffer.append(at::zeros({2, 1, 1, 1}));
        },
        ErrorKind::Runtime, {"[2, 1, 1, 1]"}));
    EXPECT_TRUE(refuses(
        [&] {
            buffer.append(at::zeros({1, 1, 1}));
        },
        ErrorKind::Value, {"4-D", "[1, 1, 1]"}));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2}));
    buffer.append(states({3}));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
}

TEST(SequenceBufferTest, FirstAppendRefusesNonFourDimensionalStates) {
    SequenceBuffer buffer;
    EXPECT_TRUE(refuses([&] { buffer.append(at::zeros({3})); }, ErrorKind::Value, {"[3]"}));
    EXPECT_FALSE(buffer.hasShape());
}

TEST(SequenceBufferTest, AssignClearAndZero) {
    SequenceBuffer buffer;
    buffer.assign(rangeStates(1, 3));
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
    buffer.zero();
    EXPECT_EQ(values(buffer.view()), (Values{0, 0, 0}));
    EXPECT_EQ(buffer.length(), 3);
    buffer.clear();
    EXPECT_FALSE(buffer.hasShape());
    EXPECT_EQ(buffer.length(), 0);
    buffer.append(states({5}));
    EXPECT_EQ(values(buffer.view()), (Values{5}));
}

TEST(SequenceBufferTest, MoveToTheSameDeviceKeepsContents) {
    SequenceBuffer buffer;
    buffer.append(rangeStates(1, 3));
    buffer.moveTo(at::kCPU, /*nonBlocking=*/true);
    EXPECT_EQ(values(buffer.view()), (Values{1, 2, 3}));
    EXPECT_TRUE(buffer.storage().device().is_cpu());
}

TEST(SequenceBufferFreeFunctionsTest, CheckSameSequenceShapeNamesBothShapes) {
    EXPECT_TRUE(refuses(
        [] {
            checkSameSequenceShape(at::zeros({1, 2, 5, 4}), at::zeros({1, 3, 1, 4}), "keys");
        },
        ErrorKind::Runtime, {"keys", "[1, 2, 5, 4]", "[1, 3, 1, 4]"}));
    EXPECT_NO_THROW(checkSameSequenceShape(at::zeros({1, 2, 5, 4}), at::zeros({1, 2, 9, 4}), "keys"));
    EXPECT_TRUE(refuses([] { checkFourDimensional(at::Tensor(), "value_states"); }, ErrorKind::Value,
                        {"value_states", "undefined"}));
}

} // namespace
} // namespace kvscope::cache
