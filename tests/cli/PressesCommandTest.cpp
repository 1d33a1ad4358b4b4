// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressesCommand.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace {

using kvscope::cli::PressesCommand;

TEST(PressesCommandTest, ListsEachPressWithTypedOptions) {
    const nlohmann::json listed = PressesCommand::list();
    ASSERT_EQ(listed.at("presses").size(), 20u);
    const nlohmann::json& snapkv = listed["presses"][2];
    EXPECT_EQ(snapkv.at("name"), "snapkv");
    EXPECT_EQ(snapkv.at("phase"), "prefill");
    ASSERT_EQ(snapkv.at("options").size(), 2u);
    EXPECT_EQ(snapkv["options"][0], (nlohmann::json{{"name", "window_size"},
                                                    {"type", "int"},
                                                    {"default", "64"},
                                                    {"meaning", "recent queries whose attention scores the cache; kept"}}));
    const auto decoding = std::find_if(listed["presses"].begin(), listed["presses"].end(),
                                       [](const nlohmann::json& press) { return press.at("name") == "decoding"; });
    ASSERT_NE(decoding, listed["presses"].end());
    EXPECT_EQ(decoding->at("phase"), "decoding");
}

} // namespace
