// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DFlashCache.h"

namespace kvscope::cache {

int64_t DFlashCache::queryOffset(int64_t layerIdx) const {
    return DynamicCache::queryOffset(layerIdx) + m_previousAcceptedTokens;
}

MaskSizes DFlashCache::computeMaskSizes(int64_t queryLength, int64_t layerIdx) const {
    MaskSizes sizes = DynamicCache::computeMaskSizes(queryLength, layerIdx);
    sizes.kvLength += m_previousAcceptedTokens;
    return sizes;
}

} // namespace kvscope::cache
