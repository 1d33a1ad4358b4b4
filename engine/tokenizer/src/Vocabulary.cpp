// SPDX-License-Identifier: GPL-3.0-or-later
#include "Vocabulary.h"

#include <algorithm>
#include <functional>

namespace kvscope::tokenizer {

void Vocabulary::reserve(std::size_t count) {
    m_texts.reserve(count);
    m_ids.reserve(count);
    const std::size_t slots = std::max<std::size_t>(16, 2 * count);
    if (slots > m_slots.size()) {
        m_slots.assign(slots, 0);
        for (std::uint32_t entry = 0; entry < m_texts.size(); ++entry) {
            index(entry);
        }
    }
}

void Vocabulary::index(std::uint32_t entry) {
    // A text already indexed keeps its earlier entry (its first id).
    std::uint32_t& slot = m_slots[slotOf(m_texts[entry])];
    if (slot == 0) {
        slot = entry + 1;
    }
}

std::size_t Vocabulary::slotOf(std::string_view text) const {
    // Linear probing from the text's hash mapped onto the slots: the first slot that is empty or holds this text.
    const std::uint64_t hash = std::hash<std::string_view>{}(text);
    std::size_t slot = static_cast<std::size_t>((static_cast<unsigned __int128>(hash) * m_slots.size()) >> 64);
    while (m_slots[slot] != 0 && m_texts[m_slots[slot] - 1] != text) {
        slot = slot + 1 == m_slots.size() ? 0 : slot + 1;
    }
    return slot;
}

void Vocabulary::add(std::string text, std::uint32_t id) {
    if (2 * (m_texts.size() + 1) > m_slots.size()) {
        reserve(2 * (m_texts.size() + 1));
    }
    const auto entry = static_cast<std::uint32_t>(m_texts.size());
    m_texts.push_back(std::move(text));
    m_ids.push_back(id);
    index(entry);
    if (id >= m_entryById.size()) {
        m_entryById.resize(static_cast<std::size_t>(id) + 1, kNone);
    }
    m_entryById[id] = entry;
}

std::optional<std::uint32_t> Vocabulary::find(std::string_view text) const {
    if (m_slots.empty()) {
        return std::nullopt;
    }
    const std::uint32_t entry = m_slots[slotOf(text)];
    return entry == 0 ? std::nullopt : std::optional<std::uint32_t>(m_ids[entry - 1]);
}

const std::string* Vocabulary::token(std::uint32_t id) const {
    if (id >= m_entryById.size() || m_entryById[id] == kNone) {
        return nullptr;
    }
    return &m_texts[m_entryById[id]];
}

} // namespace kvscope::tokenizer
