// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressCatalog.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressWorkload.h"

#include <ATen/ATen.h>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

using kvscope::press::PressCatalog;

std::string refusal(const std::function<void()>& build) {
    try {
        build();
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return "";
}

// The registry's contract (engine/presses/): every registration describes itself completely, its sentence
// names only what it can fill, and its factory builds the press a generation applies with its defaults.
TEST(PressCatalogTest, EveryRegistrationDescribesItselfAndBuilds) {
    const std::set<std::string> kinds = {"scorer", "wrapper", "decoding", "value-changing", "layer"};
    std::set<std::string> references;
    for (const auto& press : PressCatalog::presses()) {
        SCOPED_TRACE(press.name);
        EXPECT_FALSE(press.displayName.empty());
        EXPECT_FALSE(press.summary.empty());
        EXPECT_EQ(kinds.count(press.kind), 1U) << press.kind;
        EXPECT_TRUE(press.phase == "prefill" || press.phase == "decoding") << press.phase;
        if (!press.referenceName.empty()) {
            EXPECT_TRUE(references.insert(press.referenceName).second)
                << "two presses are " << press.referenceName;
            EXPECT_EQ(PressCatalog::fromReferenceName(press.referenceName), press.name);
        }
        // Every placeholder is {dropped}, {base}, {base_name} or a declared option (the base's included).
        const std::regex placeholder("\\{([a-z_]+)\\}");
        for (const std::string& sentence : {press.sentence, press.keptAllSentence}) {
            for (auto match = std::sregex_iterator(sentence.begin(), sentence.end(), placeholder);
                 match != std::sregex_iterator(); ++match) {
                const std::string key = (*match)[1];
                const bool filled =
                    key == "dropped" || key == "base" || key == "base_name" ||
                    !kvscope::config::PressDescriptions::optionValue({press.name}, key).empty();
                EXPECT_TRUE(filled) << "{" << key << "} in " << sentence;
            }
        }
        const kvscope::press::PressFactory& factory = PressCatalog::factory(press.name);
        EXPECT_EQ(static_cast<bool>(factory.scorer), press.kind == "scorer");
        EXPECT_NE(PressCatalog::generation({press.name, 0.5, {}}), nullptr);
    }
    EXPECT_NE(refusal([] { PressCatalog::factory("snap"); }).find("allowed: streaming_llm, knorm"),
              std::string::npos);
}

TEST(PressCatalogTest, ASentenceIsTheTemplateFilledWithTheOptions) {
    using kvscope::config::PressDescriptions;
    EXPECT_EQ(PressDescriptions::rule({"snapkv", 0.5, {{"window_size", "8"}}}, 3),
              "the 3 whose attention from the last 8 queries was lowest were dropped");
    EXPECT_EQ(PressDescriptions::rule({"adakv", 0.5, {{"base", "snapkv"}, {"base.window_size", "4"}}}, 2),
              "heads share one budget by SnapKV's scores (each keeps at least 0.2 of its share): the 2 whose "
              "attention from the last 4 queries was lowest were dropped");
    EXPECT_EQ(PressDescriptions::rule({"no_such_press", 0.5, {}}, 2), "the 2 it ranked lowest were dropped");
    // A decision that dropped nothing has its own rule where the press declares one (a busy SimLayerKV
    // layer).
    EXPECT_EQ(
        PressDescriptions::rule({"simlayerkv", 0.0, {{"lazy_threshold", "0.5"}, {"n_recent", "16"}}}, 0),
        "the layer is not lazy (its last 1 queries put at most 0.5 of their attention on the first 4 and "
        "the last 16 tokens), so it keeps every token");
    EXPECT_EQ(PressDescriptions::rule({"simlayerkv", 0.0, {{"lazy_threshold", "0.5"}}}, 7),
              "the layer is lazy (its last 1 queries put more than 0.5 of their attention on the first 4 and "
              "the recent tokens): it keeps only those, the 7 others were dropped");
}

TEST(PressCatalogTest, ListsEveryPressWithItsOptions) {
    std::vector<std::string> names;
    for (const auto& press : PressCatalog::presses()) {
        names.push_back(press.name);
        for (const auto& option : press.options) {
            EXPECT_FALSE(option.meaning.empty()) << press.name << " " << option.name;
        }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"streaming_llm",
                                               "knorm",
                                               "snapkv",
                                               "tova",
                                               "pyramidkv",
                                               "observed_attention",
                                               "expected_attention",
                                               "random",
                                               "keydiff",
                                               "lagkv",
                                               "non_causal_attention",
                                               "leverage",
                                               "cur",
                                               "compactor",
                                               "cap",
                                               "think",
                                               "simlayerkv",
                                               "adakv",
                                               "decoding",
                                               "h2o",
                                               "chunkkv",
                                               "chunk",
                                               "block",
                                               "criticalkv",
                                               "criticaladakv",
                                               "per_layer_compression",
                                               "composed",
                                               "key_rerotation",
                                               "prefill_decoding",
                                               "compression_ratio_decoding"}));
}

TEST(PressCatalogTest, BuildsPressesFromOptions) {
    EXPECT_EQ(PressCatalog::scorer("snapkv", {{"window_size", "8"}, {"kernel_size", "3"}})->referenceName(),
              "SnapKVPress");
    EXPECT_EQ(PressCatalog::decoding({{"base", "tova"}, {"target_size", "16"}}).base().name(), "tova");
    EXPECT_EQ(PressCatalog::adaKv({{"base", "snapkv"}, {"window_size", "4"}}).base().name(), "snapkv");
    EXPECT_EQ(PressCatalog::fromReferenceName("TOVAPress"), "tova");
    EXPECT_EQ(PressCatalog::fromReferenceName("NoPress"), std::nullopt);
}

TEST(PressCatalogTest, RefusesBadOptionsNamingWhatIsAllowed) {
    EXPECT_NE(refusal([] { PressCatalog::scorer("snap", {}); }).find("allowed: streaming_llm, knorm"), std::string::npos);
    EXPECT_NE(refusal([] { PressCatalog::scorer("snapkv", {{"window", "8"}}); }).find("allowed: window_size, kernel_size"),
              std::string::npos);
    EXPECT_NE(refusal([] { PressCatalog::scorer("snapkv", {{"window_size", "eight"}}); }).find("expected an integer >= 1"),
              std::string::npos);
    EXPECT_NE(refusal([] { PressCatalog::scorer("expected_attention", {{"use_vnorm", "maybe"}}); })
                  .find("expected true or false"),
              std::string::npos);
    EXPECT_NE(refusal([] { PressCatalog::adaKv({{"alpha_safeguard", "1.5"}}); }).find("expected a number in [0"),
              std::string::npos);
    EXPECT_NE(refusal([] { PressCatalog::decoding({{"base", "h2o"}}); }).find("expected a scorer press"),
              std::string::npos);
}

// Each press whose option must stay below the prompt refuses a short one in the user's terms, with the fix
// (the message `kvscope-cli run` and the inspector both show).
TEST(PressCatalogTest, APromptTooShortForAnOptionIsRefusedWithTheFix) {
    struct Case {
        const char* press;
        std::map<std::string, std::string> options;
        int64_t tokens;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"snapkv",
         {},
         20,
         "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or "
         "--press-option window_size=8"},
        {"snapkv",
         {{"window_size", "20"}},
         20,
         "SnapKV's window_size (20) must be shorter than the prompt (20 tokens): give a longer prompt or "
         "--press-option window_size=8"},
        {"pyramidkv",
         {},
         40,
         "PyramidKV's window_size (64) must be shorter than the prompt (40 tokens): give a longer prompt or "
         "--press-option window_size=16"},
        {"streaming_llm",
         {},
         3,
         "StreamingLLM's n_sink (4) must be shorter than the prompt (3 tokens): give a longer prompt or "
         "--press-option n_sink=1"},
        {"expected_attention",
         {},
         4,
         "ExpectedAttention's n_sink (4) must be shorter than the prompt (4 tokens): give a longer prompt or "
         "--press-option n_sink=2"},
    };
    for (const Case& test : cases) {
        const kvscope::press::PressWorkload workload(test.tokens);
        const auto press = PressCatalog::scorer(test.press, test.options);
        EXPECT_EQ(refusal([&] { press->select(workload.inputs(), 0.5); }), test.message) << test.press;
    }
    // TOVA's window is one query: a one-token prompt leaves nothing to rank.
    kvscope::press::PressInputs single = kvscope::press::PressWorkload(2).inputs();
    single.keys = single.keys.narrow(2, 0, 1);
    single.hiddenStates = single.hiddenStates.narrow(1, 0, 1);
    EXPECT_EQ(
        refusal([&] { PressCatalog::scorer("tova", {})->select(single, 0.5); }),
        "TOVA ranks the tokens before the last one by its attention: give a prompt of at least 2 tokens");
    // With the window the message offers, the same prompt is compressed.
    const kvscope::press::PressWorkload workload(20);
    EXPECT_EQ(
        PressCatalog::scorer("snapkv", {{"window_size", "8"}})->select(workload.inputs(), 0.5).keptCount, 10);
}

TEST(PressCatalogTest, HeavyHittersTakeABudgetAloneAndRefuseAWindowBeyondItWithTheFix) {
    EXPECT_EQ(PressCatalog::h2o({{"budget", "16"}}).recentWindow(), 2) << "an eighth of the budget";
    EXPECT_EQ(PressCatalog::h2o({}).recentWindow(), 256) << "of the default 2048";
    EXPECT_EQ(PressCatalog::h2o({{"budget", "16"}, {"recent_window", "5"}}).recentWindow(), 5);
    EXPECT_EQ(
        refusal([] {
            PressCatalog::h2o({{"budget", "16"}, {"recent_window", "32"}});
        }),
        "H2O's recent_window (32) is part of its budget (16) and must be at most that: give --press-option "
        "recent_window=2 or leave it out (budget / 8)");
}

// A wrapper refuses a base that reads what it cannot hand it (kvpress's own refusals), in the user's terms:
// which wrapper, and the fix; a base that reads only what it hands over is built.
TEST(PressCatalogTest, WrappersRefuseABaseThatReadsWhatTheyWithhold) {
    struct Case {
        const char* wrapper;
        const char* base;
        bool refused;
    };
    const std::vector<Case> cases = {
        {"adakv", "observed_attention", true},
        {"adakv", "snapkv", false},
        {"decoding", "observed_attention", true},
        {"decoding", "tova", false},
        {"prefill_decoding", "observed_attention", true},
        {"compression_ratio_decoding", "observed_attention", true},
        {"criticaladakv", "observed_attention", true},
        {"criticaladakv", "snapkv", false},
        {"chunkkv", "observed_attention", true},
        {"chunkkv", "snapkv", false},
        {"chunk", "snapkv", true},
        {"chunk", "observed_attention", true},
        {"chunk", "keydiff", false},
        {"block", "tova", true},
        {"block", "knorm", false},
        {"criticalkv", "observed_attention", false},
        {"key_rerotation", "observed_attention", false},
    };
    for (const Case& test : cases) {
        const std::string message = refusal([&] {
            PressCatalog::generation({test.wrapper, 0.5, {{"base", test.base}}});
        });
        if (test.refused) {
            EXPECT_EQ(message.rfind(std::string(test.wrapper) + " press: ", 0), 0u) << message;
            EXPECT_NE(message.find("choose"), std::string::npos) << message;
        } else {
            EXPECT_EQ(message, "") << test.wrapper << " over " << test.base;
        }
    }
}

} // namespace
