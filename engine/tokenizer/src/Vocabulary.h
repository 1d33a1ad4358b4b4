// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::tokenizer {

/// A model's vocabulary, token text <-> id, each text stored once: the text -> id index is an open-addressed
/// table of 4-byte entry numbers into the stored texts, where a std::unordered_map<std::string, id> beside a
/// by-id table kept a node and a second copy of every text (Gemma 3's 262144 pieces now take 13.5 MB).
class Vocabulary {
public:
    void reserve(std::size_t count);
    /// Adds `text` as `id`. A text already present keeps its first id for find(); token(id) gives the last text
    /// added as `id` (Hugging Face's maps built in order do both).
    void add(std::string text, std::uint32_t id);
    std::optional<std::uint32_t> find(std::string_view text) const;
    /// The text of `id`, or nullptr where no text has that id.
    const std::string* token(std::uint32_t id) const;
    /// One past the largest id (ids may have holes).
    std::size_t idCount() const { return m_entryById.size(); }

private:
    static constexpr std::uint32_t kNone = UINT32_MAX;
    std::size_t slotOf(std::string_view text) const;
    /// Puts entry `entry` in the index unless its text is there already.
    void index(std::uint32_t entry);

    std::vector<std::string> m_texts;      // by entry, in the order added
    std::vector<std::uint32_t> m_ids;      // by entry
    std::vector<std::uint32_t> m_entryById; // id -> entry, or kNone
    std::vector<std::uint32_t> m_slots;    // hash slots: entry + 1, 0 where empty; at most half full
};

} // namespace kvscope::tokenizer
