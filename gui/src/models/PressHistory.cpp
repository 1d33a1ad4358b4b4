// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressHistory.h"

#include <algorithm>
#include <span>
#include <variant>

namespace kvscope::gui {

void PressHistory::reset() {
    m_compressions.clear();
    m_reader.reset();
}

void PressHistory::update(const trace::Timeline& timeline) {
    m_reader.read(
        timeline, [this] { m_compressions.clear(); },
        [this](const trace::Event& event, std::int64_t step) {
            if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
                compression != nullptr && event.layer >= 0) {
                m_compressions.push_back({step, event.layer, *compression});
            }
        });
}

const PressHistory::Compression* PressHistory::latestAt(std::int32_t layer, std::int64_t step) const {
    // Compressions are in step order: the first one past `step` bounds the search.
    const auto end = std::upper_bound(
        m_compressions.begin(), m_compressions.end(), step,
        [](std::int64_t value, const Compression& compression) { return value < compression.step; });
    for (auto it = end; it != m_compressions.begin();) {
        --it;
        if (it->layer == layer) {
            return &*it;
        }
    }
    return nullptr;
}

} // namespace kvscope::gui
