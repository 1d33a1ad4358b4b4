// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace kvscope::tokenizer {

/// One turn of a conversation as chat templates see it.
struct ChatMessage {
    std::string role;
    std::string content;
};

/// A checkpoint's chat template (Jinja, as tokenizer_config.json or a GGUF file's tokenizer.chat_template
/// carries it), rendered as Transformers' apply_chat_template renders it (trim_blocks and lstrip_blocks on).
/// kvscope reads the subset chat templates use: text, {{ }} and {% %} with whitespace control, for/if/elif/
/// else/set, loop.first/last/index/index0/length, literals, `messages[i]['key']` and `.key`, + ~ - * / % and
/// comparisons, and/or/not, `in`, `is defined/none/string/iterable/mapping`, the filters trim/upper/lower/length/string and
/// raise_exception. A template using anything else is refused at construction, naming it.
class ChatTemplate {
public:
    /// Parses the template; TokenizerError naming the construct kvscope cannot render.
    explicit ChatTemplate(const std::string& source);
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    /// The text for `messages`, with the assistant's opening when `addGenerationPrompt`; `bosToken` and
    /// `eosToken` are the template's variables of those names. TokenizerError when the template raises.
    std::string render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                       const std::string& bosToken = {}, const std::string& eosToken = {}) const;

    /// The parsed template (defined in ChatTemplate.cpp).
    struct Node;

private:
    std::unique_ptr<Node> m_root;
};

} // namespace kvscope::tokenizer
