// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// The one place an enum's user-facing names live: every parse, print and "allowed" list of the enum
/// goes through its table, so a name is never compared anywhere else.
template <typename Enum, std::size_t Count> class NameTable {
public:
    struct Entry {
        Enum value;
        std::string_view name;
        bool alias = false; ///< accepted when parsing, never printed nor listed
    };

    constexpr explicit NameTable(std::array<Entry, Count> entries) : m_entries(entries) {}

    /// The canonical name of `value`.
    constexpr std::string_view name(Enum value) const {
        for (const Entry& entry : m_entries) {
            if (entry.value == value && !entry.alias) {
                return entry.name;
            }
        }
        return "unknown";
    }

    /// The value called `name` (canonical or alias); nullopt for anything else, so that the caller can
    /// say where the bad name came from.
    constexpr std::optional<Enum> parse(std::string_view name) const {
        for (const Entry& entry : m_entries) {
            if (entry.name == name) {
                return entry.value;
            }
        }
        return std::nullopt;
    }

    /// "a, b, c": the allowed names for messages, aliases included as "alias (= name)".
    std::string allowed() const {
        std::string text;
        for (const Entry& entry : m_entries) {
            text += text.empty() ? "" : ", ";
            text += entry.name;
            if (entry.alias) {
                text += " (= " + std::string(name(entry.value)) + ")";
            }
        }
        return text;
    }

    constexpr const std::array<Entry, Count>& entries() const { return m_entries; }

    /// The canonical names in table order (no aliases), e.g. for a menu.
    std::vector<std::string> names() const {
        std::vector<std::string> list;
        for (const Entry& entry : m_entries) {
            if (!entry.alias) {
                list.emplace_back(entry.name);
            }
        }
        return list;
    }

private:
    std::array<Entry, Count> m_entries;
};

} // namespace kvscope::config
