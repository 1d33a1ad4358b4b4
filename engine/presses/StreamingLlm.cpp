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

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// StreamingLLM: keeps the first `sinkCount` cache slots and the most recent ones.
class StreamingLlmPress : public Press {
public:
    explicit StreamingLlmPress(int64_t sinkCount = 4);
    std::string name() const override { return "streaming_llm"; }
    std::string referenceName() const override { return "StreamingLLMPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;

private:
    int64_t m_sinkCount;
};

StreamingLlmPress::StreamingLlmPress(int64_t sinkCount) : m_sinkCount(sinkCount) {}

at::Tensor StreamingLlmPress::score(const PressInputs& inputs, int64_t keptCount) const {
    const int64_t length = inputs.keys.size(2);
    if (length <= m_sinkCount) {
        refuseLongerThanPrompt("n_sink", m_sinkCount, length);
    }
    // Sinks and the most recent slots score 1, the evicted middle 0.
    at::Tensor scores = at::ones({inputs.keys.size(0), inputs.keys.size(1), length}, inputs.keys.options());
    scores.narrow(-1, m_sinkCount, length - keptCount).zero_();
    return scores;
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(streaming_llm) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::StreamingLlmPress>(options.integer("n_sink", 0));
    };
    return factory;
}
#endif
