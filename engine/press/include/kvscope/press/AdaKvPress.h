// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

#include <memory>

namespace kvscope::press {

/// AdaKV's decision for one layer: which tokens each KV head masks. The cache itself is unchanged.
struct AdaKvMask {
    int64_t keptCount = 0;
    int64_t safeCount = 0;
    int64_t prunedCount = 0;
    /// The base press's scores [B, Hkv, T], before the safeguard.
    at::Tensor scores;
    /// [B, Hkv, T], true where the head masks the token; heads mask different numbers of tokens.
    at::Tensor masked;
};

/// AdaKV: a per-head budget on top of a scorer press. Each head keeps its `alphaSafeguard` share of the
/// budget; the rest of the pruning is chosen over all heads of a batch row together.
class AdaKvPress {
public:
    AdaKvPress(std::shared_ptr<const Press> base, double alphaSafeguard = 0.2);
    AdaKvMask mask(const PressInputs& inputs, double ratio) const;
    const Press& base() const { return *m_base; }

private:
    std::shared_ptr<const Press> m_base;
    double m_alphaSafeguard;
};

} // namespace kvscope::press
