// SPDX-License-Identifier: GPL-3.0-or-later
// KeyDiff (kvpress's KeyDiffPress): keys unlike the head's average direction are the informative ones.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(keydiff) {
    kvscope::config::PressDescription press;
    press.name = "keydiff";
    press.referenceName = "KeyDiffPress";
    press.displayName = "KeyDiff";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "keeps the keys least like the head's average key direction (-cosine)";
    press.sentence = "the {dropped} whose keys pointed most like the head's average key were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>

namespace kvscope::press {
namespace {

/// KeyDiff: keeps the keys least like the head's average direction (score -cos(k, mean of unit keys)).
class KeyDiffPress : public Press {
public:
    std::string name() const override { return "keydiff"; }
    std::string referenceName() const override { return "KeyDiffPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

at::Tensor KeyDiffPress::score(const PressInputs& inputs, int64_t) const {
    const at::Tensor& keys = inputs.keys;
    // F.normalize (eps 1e-12), then the mean over the sequence.
    const at::Tensor anchor =
        (keys / keys.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12)).mean(2, /*keepdim=*/true);
    // F.cosine_similarity as torch computes it, x / sqrt(max(x·x, eps²)) on each side, then the dot product:
    // near-orthogonal keys cancel, and this order is what keeps them within 1e-5 of kvpress.
    const auto unit = [](const at::Tensor& x) {
        return x / (x * x).sum(-1, /*keepdim=*/true).clamp_min(1e-16).sqrt();
    };
    return -(unit(keys) * unit(anchor.expand_as(keys))).sum(-1);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(keydiff) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::KeyDiffPress>();
}
#endif
