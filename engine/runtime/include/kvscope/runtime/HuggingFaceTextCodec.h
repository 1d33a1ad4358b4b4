// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/runtime/TextCodec.h"

#include <filesystem>
#include <memory>

namespace kvscope::tokenizer {
class Tokenizer;
}

namespace kvscope::runtime {

/// A checkpoint's own text: its Hugging Face tokenizer (tokenizer.json, or a SentencePiece
/// tokenizer.model, or a GGUF file's tokenizer metadata), so prompts are encoded as the model expects and output reads as words.
class HuggingFaceTextCodec : public TextCodec {
public:
    /// A folder's tokenizer.json (else tokenizer.model), or one of those files; throws
    /// tokenizer::TokenizerError naming what it cannot read.
    static std::unique_ptr<HuggingFaceTextCodec> fromPath(const std::filesystem::path& path);
    /// The tokenizer a GGUF file's `tokenizer.ggml.*` metadata describes (gguf::GgufTokenizerJson); throws
    /// GenerationError naming what it cannot read.
    static std::unique_ptr<HuggingFaceTextCodec> fromGguf(const std::filesystem::path& file);
    /// Whether a checkpoint folder brings a tokenizer of its own.
    static bool folderHasTokenizer(const std::filesystem::path& folder);

    ~HuggingFaceTextCodec() override;

    std::string name() const override { return m_name; }
    std::vector<std::int64_t> encode(std::string_view text) const override;
    /// With the chat template a GGUF file carries (parsed when first asked for, so that a template kvscope
    /// cannot render only refuses --chat).
    std::vector<std::int64_t> encodeChat(std::string_view message) const override;
    std::string decode(const std::vector<std::int64_t>& ids) const override;
    std::string piece(std::int64_t id) const override;
    std::optional<std::int64_t> eosId() const override;
    /// The eos, else id 0: tokens every vocabulary has.
    std::int64_t padId() const override { return eosId().value_or(0); }
    /// The tokenizer's ids: its vocabulary plus added tokens.
    std::int64_t vocabSize() const;
    /// "BPE", "Unigram" or "SentencePiece".
    std::string modelType() const;

private:
    HuggingFaceTextCodec(std::unique_ptr<tokenizer::Tokenizer> tokenizer, std::string name);

    std::string m_chatTemplate;
    std::string m_bosToken;
    std::string m_eosToken;
    /// Whether the tokenizer has the id (a model's vocabulary may have more: padded embeddings).
    bool known(std::int64_t id) const;

    std::unique_ptr<tokenizer::Tokenizer> m_tokenizer;
    std::string m_name;
};

} // namespace kvscope::runtime
