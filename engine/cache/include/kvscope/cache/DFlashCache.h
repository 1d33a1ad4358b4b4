// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicCache.h"

namespace kvscope::cache {

/// The drafter's cache of DFlash speculative decoding (the release's `DFlashCache`): in one forward the
/// tokens accepted at the previous step are added to the keys and values but make no queries, so the query
/// offset and the mask's key length are shifted by their count.
class DFlashCache : public DynamicCache {
public:
    using DynamicCache::DynamicCache;
    std::string typeName() const override { return "DFlashCache"; }
    /// The release's `set_previous_accepted_tokens`.
    void setPreviousAcceptedTokens(int64_t count) { m_previousAcceptedTokens = count; }
    int64_t previousAcceptedTokens() const { return m_previousAcceptedTokens; }
    int64_t queryOffset(int64_t layerIdx = 0) const override;

protected:
    MaskSizes computeMaskSizes(int64_t queryLength, int64_t layerIdx) const override;

private:
    int64_t m_previousAcceptedTokens = 0;
};

} // namespace kvscope::cache
