// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/HuggingFaceTextCodec.h"

#include "kvscope/gguf/GgufError.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTokenizerJson.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/tokenizer/ChatTemplate.h"
#include "kvscope/tokenizer/Tokenizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

namespace kvscope::runtime {
namespace {

std::vector<std::int32_t> narrowed(const std::vector<std::int64_t>& ids) {
    return std::vector<std::int32_t>(ids.begin(), ids.end());
}

} // namespace

std::unique_ptr<HuggingFaceTextCodec> HuggingFaceTextCodec::fromPath(const std::filesystem::path& path) {
    auto tokenizer = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::fromPath(path));
    return std::unique_ptr<HuggingFaceTextCodec>(new HuggingFaceTextCodec(std::move(tokenizer), path.string()));
}

std::unique_ptr<HuggingFaceTextCodec> HuggingFaceTextCodec::fromGguf(const std::filesystem::path& file) {
    try {
        // The parsed file (Gemma 3's metadata: 38 MB) goes before the tokenizer is built from its JSON.
        std::optional<gguf::GgufTokenizerJson> text;
        std::string chatTemplate;
        {
            const gguf::GgufFile gguf(file);
            text = gguf::GgufTokenizerJson::fromMetadata(gguf.metadata(), file.string());
            chatTemplate = gguf.metadata().optionalString("tokenizer.chat_template").value_or("");
        }
        auto tokenizer = std::make_unique<tokenizer::Tokenizer>(
            tokenizer::Tokenizer::fromJson(text->tokenizerJson, text->configJson));
        text->tokenizerJson = {};
        std::unique_ptr<HuggingFaceTextCodec> codec(new HuggingFaceTextCodec(std::move(tokenizer), file.string()));
        codec->m_chatTemplate = std::move(chatTemplate);
        // The special tokens' texts as GgufTokenizerJson wrote them into the tokenizer config.
        const nlohmann::json config = nlohmann::json::parse(text->configJson);
        codec->m_bosToken = config.value("bos_token", std::string());
        codec->m_eosToken = config.value("eos_token", std::string());
        return codec;
    } catch (const gguf::GgufError& error) {
        throw GenerationError(error.what());
    } catch (const tokenizer::TokenizerError& error) {
        throw GenerationError("the tokenizer of GGUF file `" + file.string() + "`: " + error.what());
    }
}

bool HuggingFaceTextCodec::folderHasTokenizer(const std::filesystem::path& folder) {
    return std::filesystem::is_regular_file(folder / "tokenizer.json") ||
           std::filesystem::is_regular_file(folder / "tokenizer.model");
}

HuggingFaceTextCodec::HuggingFaceTextCodec(std::unique_ptr<tokenizer::Tokenizer> tokenizer, std::string name)
    : m_tokenizer(std::move(tokenizer)), m_name(std::move(name)) {}

HuggingFaceTextCodec::~HuggingFaceTextCodec() = default;

std::vector<std::int64_t> HuggingFaceTextCodec::encode(std::string_view text) const {
    const tokenizer::Encoding encoding = m_tokenizer->encode(text, /*addSpecialTokens=*/true);
    return std::vector<std::int64_t>(encoding.ids.begin(), encoding.ids.end());
}

std::vector<std::int64_t> HuggingFaceTextCodec::encodeChat(std::string_view message) const {
    if (m_chatTemplate.empty()) {
        throw GenerationError("--chat needs a model with a chat template, and " + m_name +
                              " carries none; give the prompt as plain text");
    }
    try {
        const tokenizer::ChatTemplate chat(m_chatTemplate);
        const std::string text = chat.render({{"user", std::string(message)}}, /*addGenerationPrompt=*/true,
                                             m_bosToken, m_eosToken);
        const tokenizer::Encoding encoding = m_tokenizer->encode(text, /*addSpecialTokens=*/false);
        return std::vector<std::int64_t>(encoding.ids.begin(), encoding.ids.end());
    } catch (const tokenizer::TokenizerError& error) {
        throw GenerationError("--chat: the chat template of " + m_name + " cannot be used: " + error.what());
    }
}

std::string HuggingFaceTextCodec::decode(const std::vector<std::int64_t>& ids) const {
    // Ids the tokenizer does not have are shown as <id:N> between the decoded runs around them.
    std::string text;
    std::vector<std::int64_t> run;
    const auto flush = [&] {
        text += m_tokenizer->decode(narrowed(run), /*skipSpecialTokens=*/true);
        run.clear();
    };
    for (const std::int64_t id : ids) {
        if (known(id)) {
            run.push_back(id);
            continue;
        }
        flush();
        text += "<id:" + std::to_string(id) + ">";
    }
    flush();
    return text;
}

std::string HuggingFaceTextCodec::piece(std::int64_t id) const {
    if (!known(id)) {
        return "<id:" + std::to_string(id) + ">";
    }
    // Special tokens keep their names ("<|begin_of_text|>"), as a strip of tokens should show them.
    return m_tokenizer->decode(narrowed({id}), /*skipSpecialTokens=*/false);
}

std::optional<std::int64_t> HuggingFaceTextCodec::eosId() const {
    if (const std::optional<std::int32_t> eos = m_tokenizer->eosId()) {
        return *eos;
    }
    return std::nullopt;
}

bool HuggingFaceTextCodec::known(std::int64_t id) const {
    return id >= 0 && id <= std::numeric_limits<std::int32_t>::max() &&
           m_tokenizer->idToToken(static_cast<std::int32_t>(id)).has_value();
}

std::int64_t HuggingFaceTextCodec::vocabSize() const { return static_cast<std::int64_t>(m_tokenizer->vocabSize()); }

std::string HuggingFaceTextCodec::modelType() const { return m_tokenizer->modelType(); }

} // namespace kvscope::runtime
