// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kvscope::paged {

/// A MessagePack value read from untrusted bytes (a server's KV events): nil, bool, integers, floats, text,
/// bytes, arrays and maps; extension types keep their bytes. read() checks every length against the bytes
/// left and nests at most kMaxDepth deep, so hostile input costs at most memory proportional to its size.
class MsgpackValue {
public:
    enum class Kind : std::uint8_t { Nil, Bool, Int, UInt, Float, Text, Bytes, Array, Map, Ext };
    static constexpr int kMaxDepth = 32;

    /// The one value `bytes` holds; throws PagedError naming the offset and the problem (truncated, a
    /// reserved byte, nested too deep, bytes left over).
    static MsgpackValue read(std::span<const std::uint8_t> bytes);

    Kind kind() const { return m_kind; }
    bool isNil() const { return m_kind == Kind::Nil; }
    bool isInteger() const { return m_kind == Kind::Int || m_kind == Kind::UInt; }
    bool boolean() const { return m_bool; }
    std::int64_t integer() const { return m_int; }   ///< Int
    std::uint64_t unsignedInteger() const { return m_uint; } ///< UInt, and Int's bits
    double number() const;                           ///< Float, Int or UInt as a double
    const std::string& text() const { return m_text; }  ///< Text, Bytes and Ext's bytes
    const std::vector<MsgpackValue>& items() const { return m_items; } ///< Array
    const std::vector<std::pair<MsgpackValue, MsgpackValue>>& entries() const { return m_entries; } ///< Map
    /// A map's value under a text key; null when absent or not a map.
    const MsgpackValue* field(std::string_view key) const;
    /// "nil", "an integer", "text", ... for messages.
    static std::string_view describe(Kind kind);

private:
    class Reader;
    Kind m_kind = Kind::Nil;
    bool m_bool = false;
    std::int64_t m_int = 0;
    std::uint64_t m_uint = 0;
    double m_float = 0;
    std::string m_text;
    std::vector<MsgpackValue> m_items;
    std::vector<std::pair<MsgpackValue, MsgpackValue>> m_entries;
};

} // namespace kvscope::paged
