// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/tokenizer/Tokenizer.h"

#include "AddedVocabulary.h"
#include "ComponentJson.h"
#include "Decoder.h"
#include "Model.h"
#include "Normalizer.h"
#include "PostProcessor.h"
#include "PreTokenizer.h"
#include "SentencePieceModel.h"
#include "Unicode.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <unordered_set>

namespace kvscope::tokenizer {

namespace {

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw TokenizerError("cannot read " + path.string());
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// transformers rebuilds the post-processor of these classes from add_bos_token/add_eos_token
// (LlamaTokenizerFast.update_post_processor), so the config's flags win over tokenizer.json there.
bool configDrivesTemplate(const std::string& tokenizerClass) {
    static const std::unordered_set<std::string> classes = {
        "LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast",
        "CodeLlamaTokenizer", "CodeLlamaTokenizerFast"};
    return classes.contains(tokenizerClass);
}

// transformers' clean_up_tokenization: drop the space the decoder left before punctuation.
std::string cleanUpTokenization(std::string text) {
    static const std::pair<std::string_view, std::string_view> rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : rules) {
        std::string out;
        out.reserve(text.size());
        std::size_t position = 0;
        std::size_t found = 0;
        while ((found = text.find(from, position)) != std::string::npos) {
            out.append(text, position, found - position);
            out.append(to);
            position = found + from.size();
        }
        out.append(text, position);
        text = std::move(out);
    }
    return text;
}

} // namespace

struct Tokenizer::Impl {
    TokenizerConfig config;
    // tokenizer.json pipeline
    std::unique_ptr<Normalizer> normalizer;
    std::unique_ptr<PreTokenizer> preTokenizer;
    std::unique_ptr<Model> model;
    std::unique_ptr<PostProcessor> postProcessor;
    std::unique_ptr<Decoder> decoder;
    AddedVocabulary added;
    std::unordered_set<std::string> addedContents;
    std::unordered_set<std::uint32_t> specialIds;
    // or a SentencePiece model
    std::unique_ptr<SentencePieceModel> sentencePiece;

    std::optional<std::int32_t> tokenToId(std::string_view token) const {
        if (sentencePiece) {
            return sentencePiece->pieceToId(token);
        }
        if (const auto id = added.idOf(token)) {
            return static_cast<std::int32_t>(*id);
        }
        if (const auto id = model->tokenToId(token)) {
            return static_cast<std::int32_t>(*id);
        }
        return std::nullopt;
    }

    const std::string* idToToken(std::uint32_t id) const {
        if (const AddedToken* token = added.byId(id)) {
            return &token->content;
        }
        return model->idToToken(id);
    }

    void encodePiece(const NormalizedString& piece, std::vector<ModelToken>& scratch,
                     std::vector<EncodedToken>& out) const {
        scratch.clear();
        model->tokenize(piece.text(), scratch);
        for (const ModelToken& token : scratch) {
            const Span span = piece.originalSpan(token.begin, token.end);
            if (token.textFromInput) {
                out.push_back({token.id, piece.text().substr(token.begin, token.end - token.begin), span});
                continue;
            }
            const std::string* text = model->idToToken(token.id);
            out.push_back({token.id, text != nullptr ? *text : std::string(), span});
        }
    }

    void encodeSection(std::string_view text, std::uint32_t base, std::vector<EncodedToken>& out) const {
        NormalizedString normalized(text, base);
        if (normalizer) {
            normalized = normalizer->normalize(normalized);
        }
        if (normalized.empty()) {
            return;
        }
        std::vector<AddedVocabulary::Split> splits;
        added.split(normalized.text(), true, splits);
        std::vector<NormalizedString> pieces;
        std::vector<ModelToken> scratch;
        for (const auto& split : splits) {
            if (split.id) {
                out.push_back({*split.id, *idToToken(*split.id), normalized.originalSpan(split.begin, split.end)});
                continue;
            }
            pieces.clear();
            if (splits.size() == 1) {
                pieces.push_back(std::move(normalized)); // the whole section: no copy
            } else {
                pieces.push_back(normalized.slice(split.begin, split.end));
            }
            if (preTokenizer) {
                preTokenizer->preTokenize(pieces);
            }
            for (const NormalizedString& piece : pieces) {
                encodePiece(piece, scratch, out);
            }
        }
    }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::fromJson(std::string_view tokenizerJson, std::string_view configJson) {
    auto impl = std::make_unique<Impl>();
    impl->config = TokenizerConfig::fromJson(configJson);
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(tokenizerJson);
    } catch (const nlohmann::json::exception& error) {
        throw TokenizerError(std::string("tokenizer.json: bad JSON: ") + error.what());
    }
    if (!json.is_object()) {
        throw TokenizerError("tokenizer.json: expected a JSON object");
    }
    if (!json.contains("model")) {
        throw TokenizerError("tokenizer.json: missing \"model\"");
    }
    for (const char* unsupported : {"truncation", "padding"}) {
        if (json.contains(unsupported) && !json[unsupported].is_null()) {
            ComponentJson::refuse(unsupported, "setting", json[unsupported].dump(), "null");
        }
    }
    const nlohmann::json null;
    const auto field = [&](const char* key) -> const nlohmann::json& {
        const auto it = json.find(key);
        return it == json.end() ? null : *it;
    };
    impl->normalizer = Normalizer::fromJson(field("normalizer"));
    impl->preTokenizer = PreTokenizer::fromJson(field("pre_tokenizer"));
    impl->model = Model::fromJson(json["model"]);
    impl->postProcessor = PostProcessor::fromJson(field("post_processor"));
    impl->added = AddedVocabulary(field("added_tokens"), impl->normalizer.get());
    for (const AddedToken& token : impl->added.tokens()) {
        impl->addedContents.insert(token.content);
        if (token.special) {
            impl->specialIds.insert(token.id);
        }
    }
    for (const std::string& token : impl->config.additionalSpecialTokens) {
        if (const auto id = impl->tokenToId(token)) {
            impl->specialIds.insert(static_cast<std::uint32_t>(*id));
        }
    }
    impl->decoder = Decoder::fromJson(field("decoder"), &impl->addedContents);

    const TokenizerConfig& config = impl->config;
    if ((config.addBosToken || config.addEosToken) && configDrivesTemplate(config.tokenizerClass)) {
        std::vector<EncodedToken> prefix;
        std::vector<EncodedToken> suffix;
        const auto special = [&](const std::optional<std::string>& name, const char* what) {
            if (!name) {
                throw TokenizerError(std::string("tokenizer_config.json: add_") + what + "_token is true but " + what +
                                     "_token is not set");
            }
            const auto id = impl->tokenToId(*name);
            if (!id) {
                throw TokenizerError(std::string("tokenizer_config.json: ") + what + "_token '" + *name +
                                     "' is not in the vocabulary");
            }
            return EncodedToken{static_cast<std::uint32_t>(*id), *name, {0, 0}};
        };
        if (config.addBosToken.value_or(false)) {
            prefix.push_back(special(config.bosToken, "bos"));
        }
        if (config.addEosToken.value_or(false)) {
            suffix.push_back(special(config.eosToken, "eos"));
        }
        impl->postProcessor = PostProcessor::bosEosTemplate(prefix, suffix);
    }
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::fromPath(const std::filesystem::path& path) {
    namespace fs = std::filesystem;
    fs::path folder = path;
    fs::path file;
    if (fs::is_directory(path)) {
        if (fs::exists(path / "tokenizer.json")) {
            file = path / "tokenizer.json";
        } else if (fs::exists(path / "tokenizer.model")) {
            file = path / "tokenizer.model";
        } else {
            throw TokenizerError(path.string() + ": no tokenizer.json or tokenizer.model in this folder");
        }
    } else if (fs::exists(path)) {
        file = path;
        folder = path.parent_path();
    } else {
        throw TokenizerError(path.string() + ": no such file or folder");
    }
    std::string configText;
    if (fs::exists(folder / "tokenizer_config.json")) {
        configText = readFile(folder / "tokenizer_config.json");
    }
    if (file.extension() == ".model") {
        auto impl = std::make_unique<Impl>();
        impl->config = TokenizerConfig::fromJson(configText);
        impl->sentencePiece = std::make_unique<SentencePieceModel>(file);
        return Tokenizer(std::move(impl));
    }
    return fromJson(readFile(file), configText);
}

Encoding Tokenizer::encode(std::string_view text, bool addSpecialTokens) const {
    const Impl& impl = *m_impl;
    if (!Unicode::isValidUtf8(text)) {
        throw TokenizerError("encode: the text is not valid UTF-8");
    }
    if (text.size() > 0xFFFFFFF0u) {
        throw TokenizerError("encode: texts over 4 GiB are not supported");
    }
    if (impl.sentencePiece) {
        Encoding encoding = impl.sentencePiece->encode(text);
        // SentencePiece adds nothing by itself; Llama's convention (bos yes, eos no) unless configured.
        if (addSpecialTokens && impl.config.addBosToken.value_or(true) && impl.sentencePiece->bosId()) {
            const std::int32_t bos = *impl.sentencePiece->bosId();
            encoding.ids.insert(encoding.ids.begin(), bos);
            encoding.tokens.insert(encoding.tokens.begin(), *impl.sentencePiece->idToPiece(bos));
            encoding.offsets.insert(encoding.offsets.begin(), {0, 0});
        }
        if (addSpecialTokens && impl.config.addEosToken.value_or(false) && impl.sentencePiece->eosId()) {
            const std::int32_t eos = *impl.sentencePiece->eosId();
            encoding.ids.push_back(eos);
            encoding.tokens.push_back(*impl.sentencePiece->idToPiece(eos));
            encoding.offsets.emplace_back(0, 0);
        }
        return encoding;
    }
    std::vector<EncodedToken> tokens;
    tokens.reserve(text.size() / 3 + 4);
    std::vector<AddedVocabulary::Split> splits;
    impl.added.split(text, false, splits);
    for (const auto& split : splits) {
        const auto begin = static_cast<std::uint32_t>(split.begin);
        const auto end = static_cast<std::uint32_t>(split.end);
        if (split.id) {
            tokens.push_back({*split.id, *impl.idToToken(*split.id), {begin, end}});
        } else {
            impl.encodeSection(text.substr(split.begin, split.end - split.begin), begin, tokens);
        }
    }
    if (impl.postProcessor) {
        impl.postProcessor->process(tokens, addSpecialTokens);
    }
    Encoding encoding;
    encoding.ids.reserve(tokens.size());
    encoding.tokens.reserve(tokens.size());
    encoding.offsets.reserve(tokens.size());
    for (EncodedToken& token : tokens) {
        encoding.ids.push_back(static_cast<std::int32_t>(token.id));
        encoding.tokens.push_back(std::move(token.token));
        encoding.offsets.emplace_back(token.offsets.start, token.offsets.end);
    }
    return encoding;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecialTokens) const {
    const Impl& impl = *m_impl;
    if (impl.sentencePiece) {
        if (!skipSpecialTokens) {
            return impl.sentencePiece->decode(ids);
        }
        std::vector<std::int32_t> kept;
        for (const std::int32_t id : ids) {
            if (!impl.sentencePiece->isControl(id)) {
                kept.push_back(id);
            }
        }
        return impl.sentencePiece->decode(kept);
    }
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const std::int32_t signedId : ids) {
        if (signedId < 0) {
            throw TokenizerError("decode: negative id " + std::to_string(signedId));
        }
        const auto id = static_cast<std::uint32_t>(signedId);
        if (skipSpecialTokens && impl.specialIds.contains(id)) {
            continue;
        }
        if (const std::string* token = impl.idToToken(id)) {
            tokens.push_back(*token);
        } else if (const auto unk = impl.model->unkId()) {
            tokens.push_back(*impl.model->idToToken(*unk));
        } else {
            throw TokenizerError("decode: id " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(vocabSize()) + " and the model has no unknown token");
        }
    }
    std::string text;
    if (impl.decoder) {
        impl.decoder->decodeChain(tokens);
        for (const std::string& piece : tokens) {
            text += piece;
        }
    } else {
        for (std::size_t k = 0; k < tokens.size(); ++k) {
            text += (k > 0 ? " " : "") + tokens[k];
        }
    }
    return impl.config.cleanUpTokenizationSpaces ? cleanUpTokenization(std::move(text)) : text;
}

std::optional<std::int32_t> Tokenizer::tokenToId(std::string_view token) const { return m_impl->tokenToId(token); }

std::optional<std::string> Tokenizer::idToToken(std::int32_t id) const {
    if (id < 0) {
        return std::nullopt;
    }
    if (m_impl->sentencePiece) {
        return m_impl->sentencePiece->idToPiece(id);
    }
    const std::string* token = m_impl->idToToken(static_cast<std::uint32_t>(id));
    return token != nullptr ? std::optional<std::string>(*token) : std::nullopt;
}

std::size_t Tokenizer::vocabSize() const {
    if (m_impl->sentencePiece) {
        return m_impl->sentencePiece->vocabSize();
    }
    std::size_t size = m_impl->model->vocabSize();
    for (const AddedToken& token : m_impl->added.tokens()) {
        size = std::max<std::size_t>(size, token.id + 1);
    }
    return size;
}

std::optional<std::int32_t> Tokenizer::bosId() const {
    if (m_impl->config.bosToken) {
        return tokenToId(*m_impl->config.bosToken);
    }
    return m_impl->sentencePiece ? m_impl->sentencePiece->bosId() : std::nullopt;
}

std::optional<std::int32_t> Tokenizer::eosId() const {
    if (m_impl->config.eosToken) {
        return tokenToId(*m_impl->config.eosToken);
    }
    return m_impl->sentencePiece ? m_impl->sentencePiece->eosId() : std::nullopt;
}

const TokenizerConfig& Tokenizer::config() const { return m_impl->config; }

std::string Tokenizer::modelType() const {
    return m_impl->sentencePiece ? "SentencePiece" : m_impl->model->typeName();
}

} // namespace kvscope::tokenizer
