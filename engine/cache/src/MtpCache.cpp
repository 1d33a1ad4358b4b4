// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/MtpCache.h"

namespace kvscope::cache {

int64_t MtpCache::queryOffset(int64_t layerIdx) const { return DynamicCache::queryOffset(layerIdx) + layerIdx + 1; }

MaskSizes MtpCache::computeMaskSizes(int64_t queryLength, int64_t layerIdx) const {
    MaskSizes sizes = DynamicCache::computeMaskSizes(queryLength, layerIdx);
    sizes.kvOffset += layerIdx + 1;
    return sizes;
}

} // namespace kvscope::cache
