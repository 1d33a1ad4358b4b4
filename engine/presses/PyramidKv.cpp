// SPDX-License-Identifier: GPL-3.0-or-later
// PyramidKV (kvpress's PyramidKVPress): SnapKV's scores, a budget shrinking with depth.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(pyramidkv) {
    kvscope::config::PressDescription press;
    press.name = "pyramidkv";
    press.referenceName = "PyramidKVPress";
    press.displayName = "PyramidKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "SnapKV scores with a per-layer budget shrinking towards the last layer";
    press.options = {kvscope::config::PressOption::window(),
                     kvscope::config::PressOption::kernel(),
                     {"beta", "float", "20", "ratio of the first layer's budget to the last's"}};
    press.sentence =
        "with a budget that shrinks towards the last layer (beta {beta}), the {dropped} whose attention "
        "from the last {window_size} queries was lowest were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/SnapKvPress.h"

#include <cmath>
#include <limits>

namespace kvscope::press {
namespace {

/// PyramidKV: SnapKV's scores with a budget that shrinks from the first layer to the last.
class PyramidKvPress : public SnapKvPress {
public:
    PyramidKvPress(int64_t windowSize = 64, int64_t kernelSize = 5, double beta = 20.0);
    std::string name() const override { return "pyramidkv"; }
    std::string referenceName() const override { return "PyramidKVPress"; }
    int64_t keptCount(int64_t length, double ratio, const PressInputs& inputs) const override;

private:
    double m_beta;
};

PyramidKvPress::PyramidKvPress(int64_t windowSize, int64_t kernelSize, double beta)
    : SnapKvPress(windowSize, kernelSize), m_beta(beta) {}

int64_t PyramidKvPress::keptCount(int64_t length, double ratio, const PressInputs& inputs) const {
    // kvpress's budget, in double; std::nearbyint rounds half to even as Python's round does.
    const double window = static_cast<double>(windowSize());
    const double tokens = static_cast<double>(length);
    const double capacity = window + tokens * (1.0 - ratio);
    double minimum = (capacity - window) / m_beta;
    double maximum = (capacity - window) * 2.0 - minimum;
    if (maximum >= tokens - window) {
        maximum = tokens - window;
        minimum = (capacity - window) * 2.0 - maximum;
    }
    // One layer is both the first and the last: no pyramid to spread (kvpress divides by num_layers - 1 and
    // fails there), so it keeps the uniform budget, as when the pyramid does not fit.
    if (!(tokens >= maximum && maximum >= minimum && minimum >= window) || inputs.numLayers <= 1) {
        return static_cast<int64_t>(std::nearbyint(tokens * (1.0 - ratio)));
    }
    const double steps = (maximum - minimum) / static_cast<double>(inputs.numLayers - 1);
    return static_cast<int64_t>(std::nearbyint(maximum - static_cast<double>(inputs.layerIndex) * steps));
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(pyramidkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::PyramidKvPress>(
            options.integer("window_size", 1), options.integer("kernel_size", 1),
            options.real("beta", 1e-9, std::numeric_limits<double>::max()));
    };
    return factory;
}
#endif
