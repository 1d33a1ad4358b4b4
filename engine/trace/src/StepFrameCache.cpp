// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/StepFrameCache.h"

#include <algorithm>

namespace kvscope::trace {

StepFrameCache::StepFrameCache(std::size_t capacitySteps)
    : m_capacity(std::max<std::size_t>(capacitySteps, 1)) {}

StepFrameCache::Frame StepFrameCache::get(std::int64_t step,
                                          const std::function<std::vector<Event>()>& decode) {
    {
        const std::lock_guard lock(m_mutex);
        if (const auto found = m_byStep.find(step); found != m_byStep.end()) {
            m_recent.splice(m_recent.begin(), m_recent, found->second);
            return found->second->second;
        }
    }
    // Decoded outside the lock: two readers of one step may both decode it, which is only wasted work.
    Frame frame = std::make_shared<const std::vector<Event>>(decode());
    const std::lock_guard lock(m_mutex);
    ++m_decodes;
    if (m_byStep.find(step) == m_byStep.end()) {
        m_recent.emplace_front(step, frame);
        m_byStep[step] = m_recent.begin();
        while (m_recent.size() > m_capacity) {
            m_byStep.erase(m_recent.back().first);
            m_recent.pop_back();
        }
    }
    return frame;
}

void StepFrameCache::clear() {
    const std::lock_guard lock(m_mutex);
    m_recent.clear();
    m_byStep.clear();
}

std::size_t StepFrameCache::size() const {
    const std::lock_guard lock(m_mutex);
    return m_recent.size();
}

std::uint64_t StepFrameCache::decodes() const {
    const std::lock_guard lock(m_mutex);
    return m_decodes;
}

} // namespace kvscope::trace
