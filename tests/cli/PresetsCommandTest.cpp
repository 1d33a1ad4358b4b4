// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PresetsCommand.h"

#include "kvscope/runtime/PresetCatalog.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using kvscope::cli::PresetsCommand;

TEST(PresetsCommandTest, ListsEveryPresetWithItsPattern) {
    const nlohmann::json listed = PresetsCommand::list(kvscope::runtime::PresetCatalog(kvscope::runtime::PresetCatalog::builtinDirectory()));
    EXPECT_EQ(listed.at("default"), "llama");
    std::map<std::string, nlohmann::json> byName;
    for (const auto& entry : listed.at("presets")) {
        EXPECT_FALSE(entry.contains("error")) << entry.dump();
        byName[entry.at("name").get<std::string>()] = entry;
    }
    EXPECT_EQ(byName.size(), 8u);
    EXPECT_EQ(byName.at("gemma3").at("pattern"), "5 sliding_attention + full_attention");
    EXPECT_EQ(byName.at("gemma3").at("sliding_window"), 8);
    EXPECT_EQ(byName.at("llama4").at("layer_types").at(3), "full_attention");
    EXPECT_EQ(byName.at("llama4").at("attention_chunk_size"), 32);
    EXPECT_TRUE(byName.at("llama").at("sliding_window").is_null());
    EXPECT_EQ(byName.at("qwen3-next").at("layer_types").at(0), "linear_attention");
    EXPECT_EQ(byName.at("gemma3n").at("num_kv_shared_layers"), 3);
    EXPECT_TRUE(byName.at("whisper").at("encoder_decoder").get<bool>());
}

TEST(PresetsCommandTest, ABrokenPresetIsReportedNotFatal) {
    // A folder holding one valid and one invalid config.
    const auto folder = std::filesystem::temp_directory_path() / "kvscope-presets-command";
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "good.json") << R"({"model_type": "llama", "num_hidden_layers": 2})";
    std::ofstream(folder / "bad.json") << R"({"model_type": "bert"})";
    const nlohmann::json listed = PresetsCommand::list(kvscope::runtime::PresetCatalog(folder));
    std::filesystem::remove_all(folder);
    ASSERT_EQ(listed.at("presets").size(), 2u);
    EXPECT_NE(listed.at("presets").at(0).at("error").get<std::string>().find("bert"), std::string::npos);
    EXPECT_EQ(listed.at("presets").at(1).at("pattern"), "2 full_attention");
}

TEST(PresetsCommandTest, RegistersTheSubcommand) {
    CLI::App app;
    CLI::App* presets = PresetsCommand::addSubcommand(app);
    const char* argv[] = {"kvscope-cli", "presets"};
    app.parse(2, argv);
    EXPECT_TRUE(presets->parsed());
    std::ostringstream out;
    EXPECT_EQ(PresetsCommand::execute(out), 0);
    EXPECT_EQ(nlohmann::json::parse(out.str()).at("presets").size(), 8u);
}
