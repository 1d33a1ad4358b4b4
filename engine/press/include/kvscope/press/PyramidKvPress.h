// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"
#include "kvscope/press/SnapKvPress.h"

namespace kvscope::press {

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

} // namespace kvscope::press
