// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::tokenizer {

/// A BPE model's merges, (left id, right id) -> (rank, merged id), in one open-addressed array of 16-byte slots
/// three quarters full once reserved: about 21 bytes a merge, where a std::unordered_map kept a 32-byte node and
/// a bucket for each (Gemma 3's GGUF vocabulary makes 514847 merges: 11 MB).
class MergeTable {
public:
    struct Merge {
        std::uint32_t rank;
        std::uint32_t mergedId;
    };

    void reserve(std::size_t count);
    /// Adds the pair's merge unless the pair has one already (the first wins, as in Hugging Face's map built in
    /// order).
    void add(std::uint32_t left, std::uint32_t right, Merge merge);
    const Merge* find(std::uint32_t left, std::uint32_t right) const;
    std::size_t size() const { return m_size; }

private:
    struct Slot {
        std::uint64_t key; // left << 32 | right; kEmpty where unused
        Merge merge;
    };
    static constexpr std::uint64_t kEmpty = UINT64_MAX;
    std::size_t slotOf(std::uint64_t key) const;

    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
};

} // namespace kvscope::tokenizer
