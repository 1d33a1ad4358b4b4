// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/CompressionLayout.h"

#include <algorithm>

namespace kvscope::trace {

std::int64_t CompressionLayout::droppedStride(std::int64_t dropped, std::int32_t heads) {
    const std::int64_t perHead =
        std::max<std::int64_t>(1, kCompressionDroppedLimit / std::max<std::int32_t>(heads, 1));
    return std::max<std::int64_t>(1, (dropped + perHead - 1) / perHead);
}

std::int64_t CompressionLayout::droppedRecorded(std::int64_t dropped, std::int32_t heads) {
    if (dropped <= 0) {
        return 0;
    }
    const std::int64_t stride = droppedStride(dropped, heads);
    return (dropped + stride - 1) / stride;
}

CompressionLayout::CompressionLayout(const CompressionEvent& event) : m_event(event) {
    m_consistent = layOut();
    if (!m_consistent) {
        m_heads.clear();
        m_keptTotal = m_droppedTotal = 0;
    }
}

bool CompressionLayout::layOut() {
    const CompressionEvent& e = m_event;
    if (e.heads <= 0 || e.heads > kMaxHeads || e.lengthBefore < 0 || e.lengthAfter < 0 ||
        e.lengthAfter > e.lengthBefore || e.keptRecorded < 0) {
        return false;
    }
    const bool perHead = !e.keptPerHead.empty();
    if (perHead && e.keptPerHead.size() != static_cast<std::size_t>(e.heads)) {
        return false;
    }
    if (!perHead && e.droppedCount != e.lengthBefore - e.lengthAfter) {
        return false;
    }
    m_heads.resize(static_cast<std::size_t>(e.heads));
    std::int64_t droppedRecordedTotal = 0;
    for (std::size_t index = 0; index < m_heads.size(); ++index) {
        Head& head = m_heads[index];
        head.kept = perHead ? e.keptPerHead[index] : e.lengthAfter;
        if (head.kept < 0 || head.kept > e.lengthBefore) {
            return false;
        }
        head.dropped = e.lengthBefore - head.kept;
        head.keptOffset = m_keptTotal;
        head.droppedOffset = droppedRecordedTotal;
        head.droppedRecorded = droppedRecorded(head.dropped, e.heads);
        m_keptTotal += head.kept;
        m_droppedTotal += head.dropped;
        droppedRecordedTotal += head.droppedRecorded;
    }
    if (perHead && e.droppedCount != m_droppedTotal) {
        return false;
    }
    if (e.keptRecorded != 0 && e.keptRecorded != m_keptTotal) {
        return false;
    }
    const auto positions = static_cast<std::int64_t>(e.positions.size());
    const auto droppedScores = static_cast<std::int64_t>(e.droppedScores.size());
    const auto keptScores = static_cast<std::int64_t>(e.keptScores.size());
    if (e.prunedChannels.size() % m_heads.size() != 0) {
        return false;
    }
    if (!e.rotaryPositions.empty() && static_cast<std::int64_t>(e.rotaryPositions.size()) != e.keptRecorded) {
        return false;
    }
    return positions == e.keptRecorded + droppedRecordedTotal &&
           (droppedScores == 0 || droppedScores == droppedRecordedTotal) &&
           (keptScores == 0 || keptScores == e.keptRecorded);
}

const CompressionLayout::Head* CompressionLayout::head(std::int32_t index) const {
    return index >= 0 && index < heads() ? &m_heads[static_cast<std::size_t>(index)] : nullptr;
}

std::int64_t CompressionLayout::prunedChannelCount() const {
    return m_heads.empty() ? 0 : static_cast<std::int64_t>(m_event.prunedChannels.size() / m_heads.size());
}

std::span<const std::int32_t> CompressionLayout::prunedChannels(std::int32_t index) const {
    const std::int64_t count = prunedChannelCount();
    if (head(index) == nullptr || count == 0) {
        return {};
    }
    return std::span<const std::int32_t>(m_event.prunedChannels)
        .subspan(static_cast<std::size_t>(index * count), static_cast<std::size_t>(count));
}

std::int64_t CompressionLayout::keptCount(std::int32_t index) const {
    const Head* h = head(index);
    return h != nullptr ? h->kept : 0;
}

std::int64_t CompressionLayout::droppedCount(std::int32_t index) const {
    const Head* h = head(index);
    return h != nullptr ? h->dropped : 0;
}

std::span<const std::int64_t> CompressionLayout::keptPositions(std::int32_t index) const {
    const Head* h = head(index);
    if (h == nullptr || m_event.keptRecorded == 0) {
        return {};
    }
    return std::span(m_event.positions)
        .subspan(static_cast<std::size_t>(h->keptOffset), static_cast<std::size_t>(h->kept));
}

std::span<const std::int64_t> CompressionLayout::rotaryPositions(std::int32_t index) const {
    const Head* h = head(index);
    if (h == nullptr || m_event.rotaryPositions.empty()) {
        return {};
    }
    return std::span(m_event.rotaryPositions)
        .subspan(static_cast<std::size_t>(h->keptOffset), static_cast<std::size_t>(h->kept));
}

std::span<const float> CompressionLayout::keptScores(std::int32_t index) const {
    const Head* h = head(index);
    if (h == nullptr || m_event.keptScores.empty()) {
        return {};
    }
    return std::span(m_event.keptScores)
        .subspan(static_cast<std::size_t>(h->keptOffset), static_cast<std::size_t>(h->kept));
}

std::span<const std::int64_t> CompressionLayout::droppedPositions(std::int32_t index) const {
    const Head* h = head(index);
    if (h == nullptr) {
        return {};
    }
    return std::span(m_event.positions)
        .subspan(static_cast<std::size_t>(m_event.keptRecorded + h->droppedOffset),
                 static_cast<std::size_t>(h->droppedRecorded));
}

std::span<const float> CompressionLayout::droppedScores(std::int32_t index) const {
    const Head* h = head(index);
    if (h == nullptr || m_event.droppedScores.empty()) {
        return {};
    }
    return std::span(m_event.droppedScores)
        .subspan(static_cast<std::size_t>(h->droppedOffset), static_cast<std::size_t>(h->droppedRecorded));
}

} // namespace kvscope::trace
