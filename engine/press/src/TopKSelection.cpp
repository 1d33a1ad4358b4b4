// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

namespace kvscope::press {

// A stable sort keeps equal scores in index order, which makes the order canonical; torch.topk's tie
// order is implementation-defined, and the fixtures only pin the canonical one.
at::Tensor TopKSelection::largest(const at::Tensor& scores, int64_t count) {
    return std::get<1>(at::sort(scores, /*stable=*/true, /*dim=*/-1, /*descending=*/true)).narrow(-1, 0, count);
}

at::Tensor TopKSelection::smallest(const at::Tensor& scores, int64_t count) {
    return std::get<1>(at::sort(scores, /*stable=*/true, /*dim=*/-1, /*descending=*/false)).narrow(-1, 0, count);
}

// The fixtures are made with torch on the CPU, so the order is taken there whatever the device.
at::Tensor TopKSelection::torchOrder(const at::Tensor& scores, const at::Tensor& kept) {
    const at::Tensor cpuScores = scores.to(at::kCPU);
    const at::Tensor raw =
        std::get<1>(at::topk(cpuScores, kept.size(-1), -1, /*largest=*/true, /*sorted=*/true));
    const at::Tensor cpuKept = kept.to(at::kCPU);
    if (!at::equal(cpuScores.gather(-1, cpuKept), cpuScores.gather(-1, raw))) {
        return kept;
    }
    return raw.to(kept.device());
}

at::Tensor TopKSelection::gather(const at::Tensor& states, const at::Tensor& indices) {
    if (states.dim() == 3) {
        return states.gather(2, indices);
    }
    return states.gather(2, indices.unsqueeze(-1).expand({-1, -1, -1, states.size(-1)})).contiguous();
}

} // namespace kvscope::press
