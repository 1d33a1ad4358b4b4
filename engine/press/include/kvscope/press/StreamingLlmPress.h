// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

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

} // namespace kvscope::press
