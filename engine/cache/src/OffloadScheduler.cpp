// SPDX-License-Identifier: GPL-3.0-or-later
#include "OffloadScheduler.h"

#include "CacheTracer.h"
#include "kvscope/cache/Cache.h"

namespace kvscope::cache {

CacheTracer* OffloadState::tracing() const { return tracer && emitter.enabled() ? tracer.get() : nullptr; }

std::optional<std::size_t> OffloadState::prefetchDuring(std::size_t index) const {
    const std::optional<int64_t> target = cache.prefetchTarget(static_cast<int64_t>(index) + 1);
    if (!target) {
        cache.noteNothingToOffload();
        return std::nullopt;
    }
    return static_cast<std::size_t>(*target);
}

bool OffloadState::offloadsAfterUpdate(std::size_t index) const {
    return cache.offloadsAfterUpdate(static_cast<int64_t>(index));
}

} // namespace kvscope::cache
