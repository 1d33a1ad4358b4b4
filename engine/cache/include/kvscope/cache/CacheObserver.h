// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvscope::cache {

class CacheLayer;

/// What a key/value update did, as an observer sees it after the layer has run it.
struct UpdateFacts {
    int64_t newTokens = 0;      ///< tokens passed in
    int64_t newBytes = 0;       ///< bytes of the key and value states passed in
    int64_t returnedTokens = 0; ///< tokens in the states handed to the attention
};

/// Where an offloading cache left a layer after its update.
enum class TakeOut {
    Stayed,         ///< on the device (no offloading, or a layer that is not offloaded)
    Offloaded,      ///< on the host, the copy done (modeled)
    OffloadPending, ///< a device copy to the host is in flight; its events come when it finishes
};

/// Watches a Cache's key/value updates, in order: beforeUpdate, afterUpdate, afterTakeOut. Tracing is one
/// observer; policies that act on a layer after its update (eviction) are others, and need not know
/// how offloading moves the layer. Observers run on the thread that updates the cache.
class CacheObserver {
public:
    virtual ~CacheObserver() = default;
    /// Before the layer is brought in and updated.
    virtual void beforeUpdate(std::size_t index, const CacheLayer& layer) {}
    /// After the layer's update, while it is still on the device.
    virtual void afterUpdate(std::size_t index, CacheLayer& layer, const UpdateFacts& facts) {}
    /// After the offload policy has (or has not) taken the layer out.
    virtual void afterTakeOut(std::size_t index, const CacheLayer& layer, TakeOut where) {}
};

} // namespace kvscope::cache
