// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/KeyDiffPress.h"

#include <ATen/ATen.h>

namespace kvscope::press {

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

} // namespace kvscope::press
