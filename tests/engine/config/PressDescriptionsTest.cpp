// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/PressDescriptions.h"

#include <gtest/gtest.h>
#include <map>
#include <string>
#include <vector>

namespace kvscope::config {
namespace {

TEST(PressDescriptionsTest, APromptBoundedOptionFitsTheLargestPowerOfTwoInHalfThePrompt) {
    const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {{0, 0},  {1, 0},  {2, 1},   {3, 1},
                                                                      {4, 2},  {7, 2},  {8, 4},   {16, 8},
                                                                      {20, 8}, {31, 8}, {32, 16}, {200, 64}};
    for (const auto& [tokens, fit] : cases) {
        EXPECT_EQ(PressDescriptions::fitBelowPrompt(tokens), fit) << tokens << " tokens";
    }
}

TEST(PressDescriptionsTest, TheInspectorFitsDefaultsThatDoNotFitThePrompt) {
    struct Case {
        const char* what;
        PressSettings press;
        std::int64_t tokens;
        std::map<std::string, std::string> options;
        std::map<std::string, std::string> fitted;
        std::vector<std::string> notices;
    };
    const std::vector<Case> cases = {
        {"snapkv's window on the default prompt",
         {"snapkv", 0.5, {}},
         20,
         {{"window_size", "8"}},
         {{"window_size", "64"}},
         {"snapkv window_size 8 instead of 64: the prompt has 20 tokens"}},
        {"pyramidkv likewise",
         {"pyramidkv", 0.5, {{"beta", "5"}}},
         40,
         {{"beta", "5"}, {"window_size", "16"}},
         {{"window_size", "64"}},
         {"pyramidkv window_size 16 instead of 64: the prompt has 40 tokens"}},
        {"a window the prompt holds stays", {"snapkv", 0.5, {}}, 65, {}, {}, {}},
        {"a window the user gave stays (the press says why it cannot)",
         {"snapkv", 0.5, {{"window_size", "64"}}},
         20,
         {{"window_size", "64"}},
         {},
         {}},
        {"streaming_llm's sinks",
         {"streaming_llm", 0.5, {}},
         3,
         {{"n_sink", "1"}},
         {{"n_sink", "4"}},
         {"streaming_llm n_sink 1 instead of 4: the prompt has 3 tokens"}},
        {"expected_attention's sinks",
         {"expected_attention", 0.5, {}},
         4,
         {{"n_sink", "2"}},
         {{"n_sink", "4"}},
         {"expected_attention n_sink 2 instead of 4: the prompt has 4 tokens"}},
        {"adakv's base press",
         {"adakv", 0.5, {{"base", "snapkv"}}},
         20,
         {{"base", "snapkv"}, {"window_size", "8"}},
         {{"window_size", "64"}},
         {"snapkv window_size 8 instead of 64: the prompt has 20 tokens"}},
        {"a press without prompt-bounded options", {"knorm", 0.5, {}}, 2, {}, {}, {}},
        {"decoding presses act on a longer cache",
         {"decoding", 0.0, {{"base", "snapkv"}}},
         20,
         {{"base", "snapkv"}},
         {},
         {}},
        {"nothing fits a one-token prompt", {"snapkv", 0.5, {}}, 1, {}, {}, {}},
    };
    for (const Case& test : cases) {
        PressSettings press = test.press;
        EXPECT_EQ(PressDescriptions::fitToPrompt(press, test.tokens), test.notices) << test.what;
        EXPECT_EQ(press.options, test.options) << test.what;
        EXPECT_EQ(press.fitted, test.fitted) << test.what;
        EXPECT_EQ(press.name, test.press.name);
        EXPECT_EQ(press.ratio, test.press.ratio);
    }
}

TEST(PressDescriptionsTest, APromptTooShortIsSaidInTheUsersTermsWithTheFix) {
    EXPECT_EQ(
        PressDescriptions::promptTooShort("SnapKV", "window_size", 64, 20),
        "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or "
        "--press-option window_size=8");
    EXPECT_EQ(PressDescriptions::promptTooShort("StreamingLLM", "n_sink", 4, 3),
              "StreamingLLM's n_sink (4) must be shorter than the prompt (3 tokens): give a longer prompt or "
              "--press-option n_sink=1");
    EXPECT_EQ(PressDescriptions::promptTooShort("SnapKV", "window_size", 2, 1),
              "SnapKV's window_size (2) must be shorter than the prompt (1 token): give a prompt of at least "
              "3 tokens");
}

TEST(PressDescriptionsTest, HeavyHittersKeepAnEighthOfTheBudgetRecentByDefault) {
    const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {
        {2048, 256}, {16, 2}, {8, 1}, {4, 1}, {1, 1}};
    for (const auto& [budget, recent] : cases) {
        EXPECT_EQ(PressDescriptions::h2oRecentWindow(budget), recent) << "budget " << budget;
    }
    const PressDescription& h2o = PressDescriptions::describe("h2o");
    EXPECT_EQ(h2o.options.at(1).name, "recent_window");
    EXPECT_EQ(h2o.options.at(1).defaultValue, "budget / 8");
}

TEST(PressDescriptionsTest, TheOptionsBoundByThePromptAreMarked) {
    std::vector<std::string> bounded;
    for (const PressDescription& press : PressDescriptions::all()) {
        for (const PressOption& option : press.options) {
            if (option.belowPrompt) {
                bounded.push_back(press.name + "." + option.name);
            }
        }
    }
    EXPECT_EQ(bounded, (std::vector<std::string>{"streaming_llm.n_sink", "snapkv.window_size",
                                                 "pyramidkv.window_size", "expected_attention.n_sink", "lagkv.n_sink",
                                                 "cap.n_sink", "think.window_size"}));
}

} // namespace
} // namespace kvscope::config
