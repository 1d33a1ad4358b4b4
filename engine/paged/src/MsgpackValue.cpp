// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/MsgpackValue.h"

#include "kvscope/paged/PagedError.h"

#include <bit>
#include <cstring>

namespace kvscope::paged {

class MsgpackValue::Reader {
public:
    explicit Reader(std::span<const std::uint8_t> bytes) : m_bytes(bytes) {}

    MsgpackValue value(int depth) {
        if (depth > kMaxDepth)
            fail("values nested more than " + std::to_string(kMaxDepth) + " deep");
        const std::uint8_t head = byte();
        MsgpackValue value;
        if (head <= 0x7f)
            return unsignedValue(head);
        if (head >= 0xe0)
            return signedValue(static_cast<std::int8_t>(head));
        if ((head & 0xf0) == 0x80)
            return map(head & 0x0f, depth);
        if ((head & 0xf0) == 0x90)
            return array(head & 0x0f, depth);
        if ((head & 0xe0) == 0xa0)
            return text(Kind::Text, head & 0x1f);
        switch (head) {
        case 0xc0:
            return value;
        case 0xc2:
        case 0xc3:
            value.m_kind = Kind::Bool;
            value.m_bool = head == 0xc3;
            return value;
        case 0xc4:
            return text(Kind::Bytes, number(1));
        case 0xc5:
            return text(Kind::Bytes, number(2));
        case 0xc6:
            return text(Kind::Bytes, number(4));
        case 0xc7:
            return ext(number(1));
        case 0xc8:
            return ext(number(2));
        case 0xc9:
            return ext(number(4));
        case 0xca: {
            const auto bits = static_cast<std::uint32_t>(number(4));
            value.m_kind = Kind::Float;
            value.m_float = std::bit_cast<float>(bits);
            return value;
        }
        case 0xcb:
            value.m_kind = Kind::Float;
            value.m_float = std::bit_cast<double>(number(8));
            return value;
        case 0xcc:
            return unsignedValue(number(1));
        case 0xcd:
            return unsignedValue(number(2));
        case 0xce:
            return unsignedValue(number(4));
        case 0xcf:
            return unsignedValue(number(8));
        case 0xd0:
            return signedValue(static_cast<std::int8_t>(number(1)));
        case 0xd1:
            return signedValue(static_cast<std::int16_t>(number(2)));
        case 0xd2:
            return signedValue(static_cast<std::int32_t>(number(4)));
        case 0xd3:
            return signedValue(static_cast<std::int64_t>(number(8)));
        case 0xd4:
            return ext(1);
        case 0xd5:
            return ext(2);
        case 0xd6:
            return ext(4);
        case 0xd7:
            return ext(8);
        case 0xd8:
            return ext(16);
        case 0xd9:
            return text(Kind::Text, number(1));
        case 0xda:
            return text(Kind::Text, number(2));
        case 0xdb:
            return text(Kind::Text, number(4));
        case 0xdc:
            return array(number(2), depth);
        case 0xdd:
            return array(number(4), depth);
        case 0xde:
            return map(number(2), depth);
        case 0xdf:
            return map(number(4), depth);
        default:
            fail("byte 0xc1 is reserved in MessagePack");
        }
        return value;
    }

    void expectEnd() const {
        if (m_at != m_bytes.size())
            fail(std::to_string(m_bytes.size() - m_at) + " bytes follow the message's one value");
    }

private:
    [[noreturn]] void fail(const std::string& why) const {
        throw PagedError("malformed MessagePack at byte " + std::to_string(m_at) + " of " +
                         std::to_string(m_bytes.size()) + ": " + why);
    }
    void need(std::uint64_t count) const {
        if (count > m_bytes.size() - m_at)
            fail("truncated: " + std::to_string(count) + " more bytes announced, " +
                 std::to_string(m_bytes.size() - m_at) + " left");
    }
    std::uint8_t byte() {
        need(1);
        return m_bytes[m_at++];
    }
    std::uint64_t number(int width) {
        need(static_cast<std::uint64_t>(width));
        std::uint64_t result = 0;
        for (int i = 0; i < width; ++i)
            result = (result << 8) | m_bytes[m_at++];
        return result;
    }
    static MsgpackValue unsignedValue(std::uint64_t number) {
        MsgpackValue value;
        value.m_kind = Kind::UInt;
        value.m_uint = number;
        value.m_int = static_cast<std::int64_t>(number);
        return value;
    }
    static MsgpackValue signedValue(std::int64_t number) {
        MsgpackValue value;
        value.m_kind = number >= 0 ? Kind::UInt : Kind::Int;
        value.m_int = number;
        value.m_uint = static_cast<std::uint64_t>(number);
        return value;
    }
    MsgpackValue text(Kind kind, std::uint64_t length) {
        need(length);
        MsgpackValue value;
        value.m_kind = kind;
        value.m_text.assign(reinterpret_cast<const char*>(m_bytes.data() + m_at), length);
        m_at += length;
        return value;
    }
    MsgpackValue ext(std::uint64_t length) {
        byte(); // the extension's type: kept out, its bytes kept
        MsgpackValue value = text(Kind::Bytes, length);
        value.m_kind = Kind::Ext;
        return value;
    }
    MsgpackValue array(std::uint64_t count, int depth) {
        // Every element takes at least one byte: a count beyond the bytes left is a lie, refused before
        // anything is reserved for it.
        need(count);
        MsgpackValue value;
        value.m_kind = Kind::Array;
        value.m_items.reserve(count);
        for (std::uint64_t i = 0; i < count; ++i)
            value.m_items.push_back(this->value(depth + 1));
        return value;
    }
    MsgpackValue map(std::uint64_t count, int depth) {
        need(count * 2);
        MsgpackValue value;
        value.m_kind = Kind::Map;
        value.m_entries.reserve(count);
        for (std::uint64_t i = 0; i < count; ++i) {
            MsgpackValue key = this->value(depth + 1);
            MsgpackValue item = this->value(depth + 1);
            value.m_entries.emplace_back(std::move(key), std::move(item));
        }
        return value;
    }

    std::span<const std::uint8_t> m_bytes;
    std::size_t m_at = 0;
};

MsgpackValue MsgpackValue::read(std::span<const std::uint8_t> bytes) {
    Reader reader(bytes);
    MsgpackValue value = reader.value(0);
    reader.expectEnd();
    return value;
}

double MsgpackValue::number() const {
    switch (m_kind) {
    case Kind::Float:
        return m_float;
    case Kind::Int:
        return static_cast<double>(m_int);
    case Kind::UInt:
        return static_cast<double>(m_uint);
    default:
        return 0.0;
    }
}

const MsgpackValue* MsgpackValue::field(std::string_view key) const {
    for (const auto& [name, value] : m_entries)
        if (name.m_kind == Kind::Text && name.m_text == key)
            return &value;
    return nullptr;
}

std::string_view MsgpackValue::describe(Kind kind) {
    switch (kind) {
    case Kind::Nil:
        return "nil";
    case Kind::Bool:
        return "a boolean";
    case Kind::Int:
    case Kind::UInt:
        return "an integer";
    case Kind::Float:
        return "a float";
    case Kind::Text:
        return "text";
    case Kind::Bytes:
        return "bytes";
    case Kind::Array:
        return "an array";
    case Kind::Map:
        return "a map";
    case Kind::Ext:
        return "an extension value";
    }
    return "a value";
}

} // namespace kvscope::paged
