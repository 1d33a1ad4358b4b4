// SPDX-License-Identifier: GPL-3.0-or-later
// Knorm (kvpress's KnormPress): keys of small norm draw the most attention.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(knorm) {              // torch-free: compiled into kvscope_config too
    kvscope::config::PressDescription press;
    press.name = "knorm";                       // --press knorm; the identifier in PressList.h
    press.referenceName = "KnormPress";         // kvpress's class: conformance fixtures name it
    press.displayName = "Knorm";                // the event log's subject, the picker's tooltip
    press.kind = "scorer";                      // scorer | wrapper | decoding | value-changing | layer
    press.phase = "prefill";                    // prefill | decoding
    press.summary = "keeps the keys of smallest L2 norm";
    // press.options: name, type, default, meaning (PressOption); press.policy: what it reads, when it
    // acts, evicts | masks | rewrites keys. Knorm has no options and the default policy.
    press.sentence = "the {dropped} whose keys had the largest norm were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE                         // LibTorch: compiled into kvscope_press only
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>

namespace kvscope::press {
namespace {

/// Knorm: keeps the keys of smallest L2 norm (score -|k|).
class KnormPress : public Press {
public:
    std::string name() const override { return "knorm"; }
    std::string referenceName() const override { return "KnormPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

at::Tensor KnormPress::score(const PressInputs& inputs, int64_t) const {
    return -inputs.keys.norm(2, -1);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(knorm) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::KnormPress>();
}
#endif
