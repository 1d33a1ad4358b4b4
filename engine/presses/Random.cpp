// SPDX-License-Identifier: GPL-3.0-or-later
// Random (kvpress's RandomPress): a baseline of seeded random scores.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(random) {
    kvscope::config::PressDescription press;
    press.name = "random";
    press.referenceName = "RandomPress";
    press.displayName = "Random";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "random scores (torch.rand of a seeded CPU generator)";
    press.options = {{"seed", "int", "0", "generator seed"}};
    press.sentence = "{dropped} chosen at random (seed {seed}) were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <random>

namespace kvscope::press {
namespace {

/// Random: scores drawn as torch.rand from a fresh CPU generator seeded with `seed` (MT19937, 24-bit floats).
class RandomPress : public Press {
public:
    explicit RandomPress(uint64_t seed = 0);
    std::string name() const override { return "random"; }
    std::string referenceName() const override { return "RandomPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;

private:
    uint64_t m_seed;
};

RandomPress::RandomPress(uint64_t seed) : m_seed(seed) {}

at::Tensor RandomPress::score(const PressInputs& inputs, int64_t) const {
    // torch.rand on a fresh CPU generator: one MT19937 draw per element, its low 24 bits over 2^24.
    std::mt19937 generator(static_cast<std::mt19937::result_type>(m_seed & 0xFFFFFFFFu));
    at::Tensor scores = at::empty({inputs.keys.size(0), inputs.keys.size(1), inputs.keys.size(2)}, at::kFloat);
    float* data = scores.data_ptr<float>();
    for (int64_t index = 0; index < scores.numel(); ++index) {
        data[index] = static_cast<float>(generator() & 0xFFFFFFu) * (1.0f / 16777216.0f);
    }
    return scores.to(inputs.keys.device());
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(random) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::RandomPress>(
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
