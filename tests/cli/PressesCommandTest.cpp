// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressesCommand.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace {

using kvscope::cli::PressesCommand;

TEST(PressesCommandTest, ListsEachPressWithTypedOptions) {
    const nlohmann::json listed = PressesCommand::list();
    ASSERT_EQ(listed.at("presses").size(), 30u);
    const nlohmann::json& snapkv = listed["presses"][2];
    EXPECT_EQ(snapkv.at("name"), "snapkv");
    EXPECT_EQ(snapkv.at("kvpress"), "SnapKVPress");
    EXPECT_EQ(snapkv.at("display_name"), "SnapKV");
    EXPECT_EQ(snapkv.at("kind"), "scorer");
    EXPECT_EQ(snapkv.at("phase"), "prefill");
    EXPECT_EQ(snapkv.at("sentence"),
              "the {dropped} whose attention from the last {window_size} queries was lowest "
              "were dropped");
    EXPECT_EQ(snapkv.at("policy"), (nlohmann::json{{"reads", {"keys", "queries"}},
                                                   {"when", "prefill"},
                                                   {"effect", "evicts"},
                                                   {"saves_memory", true}}));
    const auto named = [&listed](const char* name) {
        const auto found =
            std::find_if(listed["presses"].begin(), listed["presses"].end(),
                         [name](const nlohmann::json& press) { return press.at("name") == name; });
        return found != listed["presses"].end() ? *found : nlohmann::json::object();
    };
    const nlohmann::json adakv = named("adakv");
    ASSERT_FALSE(adakv.empty());
    EXPECT_EQ(adakv.at("kind"), "wrapper");
    EXPECT_EQ(adakv["policy"].at("effect"), "masks");
    EXPECT_EQ(adakv["policy"].at("saves_memory"), false) << "a mask keeps every slot";
    const nlohmann::json think = named("think");
    ASSERT_FALSE(think.empty());
    EXPECT_EQ(think.at("kvpress"), "ThinKPress");
    EXPECT_EQ(think.at("kind"), "value-changing");
    EXPECT_EQ(think["policy"].at("effect"), "rewrites keys");
    EXPECT_EQ(think["policy"].at("saves_memory"), false) << "zeroed channels keep their bytes";
    ASSERT_EQ(snapkv.at("options").size(), 2u);
    EXPECT_EQ(snapkv["options"][0], (nlohmann::json{{"name", "window_size"},
                                                    {"type", "int"},
                                                    {"default", "64"},
                                                    {"meaning", "recent queries whose attention scores the cache; kept"}}));
    EXPECT_EQ(named("decoding").at("phase"), "decoding");
}

} // namespace
