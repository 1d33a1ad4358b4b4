// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicCache.h"

namespace kvscope::cache {

/// The cache of multi-token prediction heads (the release's `MtpCache`): the head of depth k (its layer
/// index) predicts k + 1 tokens ahead, so its queries and its mask's key offset are shifted by k + 1.
class MtpCache : public DynamicCache {
public:
    using DynamicCache::DynamicCache;
    std::string typeName() const override { return "MtpCache"; }
    int64_t queryOffset(int64_t layerIdx = 0) const override;

protected:
    MaskSizes computeMaskSizes(int64_t queryLength, int64_t layerIdx) const override;
};

} // namespace kvscope::cache
