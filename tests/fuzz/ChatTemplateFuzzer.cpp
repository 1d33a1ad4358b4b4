// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: any text taken as a chat template (a GGUF file's tokenizer.chat_template, a
// tokenizer_config.json's chat_template) must either be refused with a TokenizerError or render a fixed
// conversation, with or without the generation prompt, without crashing.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz ChatTemplateFuzzer
// Run:   build/fuzz/tests/fuzz/ChatTemplateFuzzer -max_len=4096 tests/fuzz/chat-template-seeds
#include "kvscope/tokenizer/ChatTemplate.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvscope::tokenizer;
    try {
        const ChatTemplate chat(std::string(reinterpret_cast<const char*>(data), size));
        const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}};
        (void)chat.render(messages, true, "<s>", "</s>");
        (void)chat.render({}, false);
    } catch (const TokenizerError&) {
    }
    return 0;
}
