// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingLLM (kvpress's StreamingLLMPress): attention sinks and a recent window.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(streaming_llm) {
    kvscope::config::PressDescription press;
    press.name = "streaming_llm";
    press.referenceName = "StreamingLLMPress";
    press.displayName = "StreamingLLM";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "keeps the first n_sink slots and the most recent ones";
    press.options = {kvscope::config::PressOption::sink()};
    press.sentence = "the first {n_sink} (attention sinks) and the most recent stay, the {dropped} in "
                     "between were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/StreamingLlmPress.h"

KVSCOPE_PRESS_FACTORY(streaming_llm) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::StreamingLlmPress>(options.integer("n_sink", 0));
    };
    return factory;
}
#endif
