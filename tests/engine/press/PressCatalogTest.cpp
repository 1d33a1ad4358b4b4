// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressCatalog.h"

#include <gtest/gtest.h>

#include <string>

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

TEST(PressCatalogTest, ListsEveryPressWithItsOptions) {
    std::vector<std::string> names;
    for (const auto& press : PressCatalog::presses()) {
        names.push_back(press.name);
        for (const auto& option : press.options) {
            EXPECT_FALSE(option.meaning.empty()) << press.name << " " << option.name;
        }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"streaming_llm", "knorm", "snapkv", "tova", "pyramidkv",
                                               "observed_attention", "expected_attention", "random", "adakv",
                                               "decoding", "h2o"}));
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

} // namespace
