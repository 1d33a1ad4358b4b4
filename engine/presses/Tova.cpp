// SPDX-License-Identifier: GPL-3.0-or-later
// TOVA (kvpress's TOVAPress): the last query's attention, averaged over every head.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(tova) {
    kvscope::config::PressDescription press;
    press.name = "tova";
    press.referenceName = "TOVAPress";
    press.displayName = "TOVA";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "the last query's attention averaged over all heads; the last token is kept";
    press.sentence = "the {dropped} the last query attended to least (averaged over heads) were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/SnapKvPress.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// TOVA: the last query's attention averaged over all query heads; the last token is kept.
class TovaPress : public Press {
public:
    std::string name() const override { return "tova"; }
    std::string referenceName() const override { return "TOVAPress"; }
    PressReads reads() const override { return {false, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

at::Tensor TovaPress::score(const PressInputs& inputs, int64_t) const {
    if (inputs.keys.size(2) < 2) {
        throw std::invalid_argument(displayName() +
                                    " ranks the tokens before the last one by its attention: give a "
                                    "prompt of at least 2 tokens");
    }
    // The last query's attention, averaged over every query head (not per group), for every KV head.
    const at::Tensor attention = SnapKvPress::windowAttention(inputs, 1); // [B, H, 1, T - 1]
    const at::Tensor scores = attention.mean(1).expand({-1, inputs.numKeyValueHeads, -1}).contiguous();
    return withPads(scores, 1, /*before=*/false);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(tova) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::TovaPress>();
}
#endif
