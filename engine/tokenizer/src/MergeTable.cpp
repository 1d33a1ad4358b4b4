// SPDX-License-Identifier: GPL-3.0-or-later
#include "MergeTable.h"

#include <algorithm>

namespace kvscope::tokenizer {

namespace {
std::uint64_t pairKey(std::uint32_t left, std::uint32_t right) {
    return (static_cast<std::uint64_t>(left) << 32) | right;
}
} // namespace

void MergeTable::reserve(std::size_t count) {
    if (4 * count <= 3 * m_slots.size()) {
        return;
    }
    // Exactly three quarters full when reserved for every merge (the constructor of a BPE model knows them all).
    const std::size_t slots = std::max<std::size_t>(16, (4 * count + 2) / 3);
    std::vector<Slot> old(slots, Slot{kEmpty, {}});
    old.swap(m_slots);
    for (const Slot& slot : old) {
        if (slot.key != kEmpty) {
            m_slots[slotOf(slot.key)] = slot;
        }
    }
}

std::size_t MergeTable::slotOf(std::uint64_t key) const {
    // A multiplicative hash (ids are small and dense: their low bits alone would cluster) mapped onto the slots
    // by its high bits, then linear probing.
    const std::uint64_t hash = key * 0x9e3779b97f4a7c15ull;
    std::size_t slot = static_cast<std::size_t>((static_cast<unsigned __int128>(hash) * m_slots.size()) >> 64);
    while (m_slots[slot].key != kEmpty && m_slots[slot].key != key) {
        slot = slot + 1 == m_slots.size() ? 0 : slot + 1;
    }
    return slot;
}

void MergeTable::add(std::uint32_t left, std::uint32_t right, Merge merge) {
    if (4 * (m_size + 1) > 3 * m_slots.size()) {
        reserve(2 * (m_size + 1));
    }
    const std::uint64_t key = pairKey(left, right);
    Slot& slot = m_slots[slotOf(key)];
    if (slot.key == kEmpty) {
        slot = {key, merge};
        ++m_size;
    }
}

const MergeTable::Merge* MergeTable::find(std::uint32_t left, std::uint32_t right) const {
    if (m_slots.empty()) {
        return nullptr;
    }
    const Slot& slot = m_slots[slotOf(pairKey(left, right))];
    return slot.key == kEmpty ? nullptr : &slot.merge;
}

} // namespace kvscope::tokenizer
