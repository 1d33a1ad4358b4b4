// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PyramidKvPress.h"

#include <cmath>

namespace kvscope::press {

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

} // namespace kvscope::press
