// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// TOVA: the last query's attention averaged over all query heads; the last token is kept.
class TovaPress : public Press {
public:

    std::string name() const override { return "tova"; }
    std::string referenceName() const override { return "TOVAPress"; }
    PressReads reads() const override { return {false, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

} // namespace kvscope::press
