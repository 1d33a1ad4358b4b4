// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kvscope::trace {

/// Decoded step frames of a file-backed Timeline, the least recently used dropped beyond a fixed number of
/// steps, so scrubbing a long session keeps memory flat. Thread-safe: a view may read while the loader fills.
class StepFrameCache {
public:
    using Frame = std::shared_ptr<const std::vector<Event>>;

    explicit StepFrameCache(std::size_t capacitySteps);

    /// The frame of `step`, decoded by `decode` when it is not cached (decode may throw; nothing is cached
    /// then).
    Frame get(std::int64_t step, const std::function<std::vector<Event>()>& decode);
    void clear();

    std::size_t capacity() const { return m_capacity; }
    std::size_t size() const;
    /// How many times get() had to decode (for tests and benchmarks).
    std::uint64_t decodes() const;

private:
    std::size_t m_capacity;
    mutable std::mutex m_mutex;
    std::list<std::pair<std::int64_t, Frame>> m_recent; ///< most recently used first
    std::unordered_map<std::int64_t, std::list<std::pair<std::int64_t, Frame>>::iterator> m_byStep;
    std::uint64_t m_decodes = 0;
};

} // namespace kvscope::trace
