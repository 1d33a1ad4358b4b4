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
        {{"keydiff", 0.3, {}}, "the 2 whose keys pointed most like the head's average key were dropped"},
        {{"lagkv", 0.3, {{"lag_size", "16"}}}, "the first 4 and the last partition stay; the 2 that varied least against the next 16-token partition"},
        {{"non_causal_attention", 0.3, {}}, "every query of their 256-token chunk"},
        {{"leverage", 0.3, {}}, "lowest leverage (random sketch of 48 columns, seed 0)"},
        {{"cur", 0.3, {}}, "the first 4 stay; the 2 with the lowest kv_product leverage"},
        {{"compactor", 0.3, {}}, "the first 8 and last 4 stay"},
        {{"cap", 0.3, {}}, "capacity for the next 512 queries"},
        {{"simlayerkv", 0.0, {{"lazy_threshold", "0.5"}}},
         "SimLayerKV kept 4 of 6 prompt tokens in layer 2: the layer is lazy (its last 1 queries put more than 0.5"},
        // The wrappers' registrations: the base press's own rule inside theirs.
        {{"key_rerotation", 0.3, {{"base", "keydiff"}}},
         "KeyRerotation kept 4 of 6 prompt tokens in layer 2: by KeyDiff's scores: the 2 whose keys pointed most "
         "like the head's average key were dropped; the kept keys were re-rotated to positions 0 to n-1 in "
         "position order, so the model sees no gap where tokens were dropped, among them ' key', 'The'. The "
         "kept keys were rewritten, so they differ from what the model computed."},
        {{"criticalkv", 0.3, {}},
         "Knorm's best share (0.5 of the budget) stayed, then the 2 whose Knorm scores times the size of their "
         "value's contribution to the output were lowest were dropped"},
        {{"chunkkv", 0.3, {{"chunk_length", "4"}}}, "whole chunks of 4 tokens were ranked by Knorm's scores"},
        {{"per_layer_compression", 0.3, {}},
         "at this layer's own ratio, by Knorm's scores: the 2 whose keys had the largest norm were dropped"},
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

TEST(PressExplainerTest, ThinKNamesTheChannelsEachHeadZeroedAndThatNoMemoryIsSaved) {
    trace::CompressionEvent pruned{6, 6, 2, 0, 12, {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, {}, {}, {}};
    pruned.prunedChannels = {3, 9, 1, 14};
    const QString sentence = PressExplainer::sentence(trace::Event{0, 0, 0, pruned},
                                                      config::PressSettings{"think", 0.25, {}}, pieces());
    EXPECT_EQ(sentence, "ThinK zeroed 2 key channels per head in layer 0 (head 0: 3, 9; head 1: 1, 14); all 6 "
                        "tokens stay, and the cache keeps its size: zeroed channels save no memory.");
    // A SimLayerKV layer that is not lazy keeps everything, and says why.
    const trace::CompressionEvent all{6, 6, 1, 0, 6, {0, 1, 2, 3, 4, 5}, {}, {}, {}};
    EXPECT_TRUE(PressExplainer::sentence(trace::Event{0, 1, 0, all}, config::PressSettings{"simlayerkv", 0.0, {}}, {})
                    .contains("SimLayerKV kept 6 of 6 prompt tokens in layer 1: the layer is not lazy (its last 1 "
                              "queries put at most 1 of their attention on the first 4 and the last 1024 tokens), "
                              "so it keeps every token"));
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

TEST(PressExplainerTest, AMaskingWrapperSaysItSavesNoMemory) {
    const trace::Event masked{
        0, 1, 0, trace::CompressionEvent{4, 4, 2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {}, {}, {3, 1}}};
    const QString sentence =
        PressExplainer::sentence(masked, config::PressSettings{"criticaladakv", 0.5, {}}, pieces());
    EXPECT_TRUE(sentence.startsWith("CriticalAdaKV kept 1 to 3 of 4 prompt tokens in layer 1 per head: heads "
                                    "share one budget by Knorm's scores"))
        << sentence.toStdString();
    EXPECT_TRUE(sentence.endsWith("The cache keeps every slot: masking saves no memory."))
        << sentence.toStdString();
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

TEST(PressExplainerTest, KeyRerotationSaysWhereTheKeptKeysNowSit) {
    // 10 prompt tokens, 2 heads keeping 0 1 7 8 9 (StreamingLLM with 2 sinks), re-rotated to 0 1 2 3 4.
    trace::CompressionEvent event{10, 5, 2, 5, 10, {0, 1, 7, 8, 9, 0, 1, 7, 8, 9}, {}, {}, {}};
    for (std::int64_t dropped : {2, 3, 4, 5, 6, 2, 3, 4, 5, 6}) {
        event.positions.push_back(dropped);
    }
    event.rotaryPositions = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    const config::PressSettings press{"key_rerotation", 0.5, {{"base", "streaming_llm"}, {"n_sink", "2"}}};
    const QString sentence = PressExplainer::sentence(trace::Event{0, 3, 0, event}, press, {});
    EXPECT_EQ(
        sentence,
        "KeyRerotation kept 5 of 10 prompt tokens in layer 3: by StreamingLLM's scores: the first 2 "
        "(attention sinks) and the most recent stay, the 5 in between were dropped; the kept keys were "
        "re-rotated to positions 0 to n-1 in position order, so the model sees no gap where tokens were "
        "dropped. Re-rotated keys: positions 0, 1, 7, 8, 9 now sit at 0, 1, 2, 3, 4 in every head; tokens "
        "generated later keep their own positions.")
        << sentence.toStdString();
    // Heads that kept different tokens are said one by one; long maps end in an ellipsis.
    trace::CompressionEvent wide{12, 10, 2, 2, 20, {}, {}, {}, {}};
    for (std::int64_t head = 0; head < 2; ++head) {
        for (std::int64_t position = 0; position < 12; ++position) {
            if (position != head && position != head + 5) {
                wide.positions.push_back(position);
            }
        }
    }
    for (std::int64_t dropped : {0, 5, 1, 6}) {
        wide.positions.push_back(dropped);
    }
    for (std::int64_t head = 0; head < 2; ++head) {
        for (std::int64_t rotary = 0; rotary < 10; ++rotary) {
            wide.rotaryPositions.push_back(rotary);
        }
    }
    const QString perHead = PressExplainer::sentence(trace::Event{0, 0, 0, wide}, press, {});
    EXPECT_TRUE(
        perHead.contains("Re-rotated keys: head 0: positions 1, 2, 3, 4, 6, 7, 8, 9, … now sit at 0, 1, 2, "
                         "3, 4, 5, 6, 7, …; head 1: positions 0, 2, 3, 4, 5, 7, 8, 9, … now sit at 0, 1, "
                         "2, 3, 4, 5, 6, 7, …; tokens generated later"))
        << perHead.toStdString();
}

TEST(PressExplainerTest, ThinKInsideComposedNamesItsChannelsBesideTheEviction) {
    // Composed: ThinK zeroed 2 channels per head, then Knorm kept 4 of 6 tokens.
    trace::CompressionEvent event{6, 4, 2, 2, 8, {0, 3, 4, 5, 0, 1, 4, 5, 1, 2, 2, 3}, {}, {}, {}};
    event.prunedChannels = {3, 9, 1, 14};
    const config::PressSettings press{"composed", 0.25, {{"first", "think"}, {"second", "knorm"}}};
    const QString sentence = PressExplainer::sentence(trace::Event{0, 1, 0, event}, press, pieces());
    EXPECT_TRUE(
        sentence.startsWith("Composed kept 4 of 6 prompt tokens in layer 1: ThinK at the run's ratio, "
                            "then Knorm at 0.5 on what it kept; the 2 ranked lowest by either were "
                            "dropped"))
        << sentence.toStdString();
    EXPECT_TRUE(
        sentence.contains(" It also zeroed 2 key channels per head (head 0: 3, 9; head 1: 1, 14), which "
                          "saves no memory."))
        << sentence.toStdString();
    EXPECT_FALSE(sentence.contains("all 6 tokens stay")) << sentence.toStdString();
}

} // namespace
} // namespace kvscope::gui
