// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressExplainer.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

EventExplainer::TokenLookup pieces() {
    static const std::vector<std::string> text = {"<bos>", "The", " key", "-value", " cache", " holds"};
    return [](std::int64_t position) -> std::optional<std::string> {
        if (position < 0 || position >= static_cast<std::int64_t>(text.size())) {
            return std::nullopt;
        }
        return text[static_cast<std::size_t>(position)];
    };
}

// One head kept 0, 3, 4, 5 of six prompt tokens; 1 and 2 were dropped, 2 with the lower score.
trace::Event prefill() {
    return trace::Event{
        0, 2, 0, trace::CompressionEvent{6, 4, 1, 2, 4, {0, 3, 4, 5, 1, 2}, {0.5F, 0.1F}, {2, 3, 4, 9}, {}}};
}

TEST(PressExplainerTest, EachPressSaysItsRuleWithItsOptions) {
    struct Case {
        config::PressSettings press;
        const char* expected;
    };
    const std::vector<Case> cases = {
        {{"snapkv", 0.3, {}},
         "SnapKV kept 4 of 6 prompt tokens in layer 2: the 2 whose attention from the last 64 queries was "
         "lowest "
         "were dropped, among them ' key', 'The'."},
        {{"snapkv", 0.3, {{"window_size", "8"}}}, "from the last 8 queries"},
        {{"streaming_llm", 0.3, {}},
         "StreamingLLM kept 4 of 6 prompt tokens in layer 2: the first 4 (attention sinks)"},
        {{"knorm", 0.3, {}}, "the 2 whose keys had the largest norm were dropped"},
        {{"tova", 0.3, {}}, "the 2 the last query attended to least"},
        {{"pyramidkv", 0.3, {{"beta", "5"}}}, "(beta 5), the 2 whose attention from the last 64 queries"},
        {{"expected_attention", 0.3, {}}, "expected from the next 512 queries"},
        {{"observed_attention", 0.3, {}}, "least attention during the prefill"},
        {{"random", 0.3, {{"seed", "7"}}}, "2 chosen at random (seed 7) were dropped"},
        {{"h2o", 0.0, {{"budget", "4"}}},
         "H2O kept 4 of 6 prompt tokens in layer 2: within a budget of 4 it keeps the 1 newest"},
        // recent_window's default follows the budget: an eighth of it.
        {{"h2o", 0.0, {{"budget", "16"}}}, "within a budget of 16 it keeps the 2 newest"},
        {{"h2o", 0.0, {{"budget", "16"}, {"recent_window", "4"}}},
         "within a budget of 16 it keeps the 4 newest"},
        // A default the inspector fitted to the prompt is said so.
        {{"snapkv", 0.5, {{"window_size", "2"}}, {{"window_size", "64"}}},
         "from the last 2 queries was lowest were dropped, among them ' key', 'The'. The inspector set "
         "window_size to 2 (default 64) to fit the short prompt."},
        {{"decoding", 0.0, {{"base", "snapkv"}, {"target_size", "4"}, {"window_size", "2"}}},
         "DecodingPress kept 4 of 6 prompt tokens in layer 2: every 512 steps it brings the cache back to 4 "
         "tokens "
         "per head by SnapKV's scores: the 2 whose attention from the last 2 queries was lowest were "
         "dropped"},
    };
    for (const Case& test : cases) {
        const QString sentence = PressExplainer::sentence(prefill(), test.press, pieces());
        EXPECT_TRUE(sentence.contains(QString::fromUtf8(test.expected))) << sentence.toStdString();
    }
}

TEST(PressExplainerTest, WithoutAPressOrTokensItStillCounts) {
    const QString unnamed = PressExplainer::sentence(prefill(), std::nullopt, {});
    EXPECT_EQ(unnamed,
              "A cache press kept 4 of 6 prompt tokens in layer 2: the 2 it ranked lowest were dropped.");
    trace::Event decoding = prefill();
    decoding.step = 9;
    EXPECT_TRUE(
        PressExplainer::sentence(decoding, std::nullopt, {}).contains("kept 4 of 6 tokens in layer 2"));
    EXPECT_TRUE(
        PressExplainer::sentence(trace::Event{0, 0, 0, trace::ResetEvent{}}, std::nullopt, {}).isEmpty());
}

TEST(PressExplainerTest, HeadsKeepingDifferentCountsAreARange) {
    // AdaKV: head 0 keeps 3 of 4, head 1 keeps 1; only position 1 is gone from both.
    const trace::Event adakv{
        0, 1, 0, trace::CompressionEvent{4, 4, 2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {}, {}, {3, 1}}};
    const QString sentence =
        PressExplainer::sentence(adakv, config::PressSettings{"adakv", 0.5, {}}, pieces());
    EXPECT_TRUE(sentence.startsWith(
        "AdaKV kept 1 to 3 of 4 prompt tokens in layer 1 per head: heads share one budget "
        "by Knorm's scores (each keeps at least 0.2 of its share)"))
        << sentence.toStdString();
    EXPECT_TRUE(sentence.contains("among them 'The'")) << sentence.toStdString();
}

TEST(PressExplainerTest, OptionsFallBackToTheCatalogueDefaults) {
    EXPECT_EQ(PressExplainer::optionValue({"snapkv", 0.5, {}}, "window_size"), "64");
    EXPECT_EQ(PressExplainer::optionValue({"snapkv", 0.5, {{"window_size", "3"}}}, "window_size"), "3");
    EXPECT_EQ(PressExplainer::optionValue({"decoding", 0.0, {{"base", "snapkv"}}}, "kernel_size"), "5")
        << "a wrapper's base press's option";
    EXPECT_EQ(PressExplainer::optionValue({"knorm", 0.5, {}}, "window_size"), "");
    EXPECT_EQ(PressExplainer::displayName("snapkv"), "SnapKV");
    EXPECT_EQ(PressExplainer::displayName("future_press"), "future_press");
}

} // namespace
} // namespace kvscope::gui
