// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

namespace kvscope::trace {

// Reads little-endian values from a byte span with bounds checks: running past the end throws
// ByteReader::Overrun, so a damaged length can never read or allocate beyond the data.
class ByteReader {
public:
    struct Overrun : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    explicit ByteReader(std::span<const std::uint8_t> bytes) : m_bytes(bytes) {}

    template <typename T> T get() {
        static_assert(std::is_trivially_copyable_v<T>);
        need(sizeof(T));
        T value;
        std::memcpy(&value, m_bytes.data() + m_at, sizeof(T));
        m_at += sizeof(T);
        return value;
    }
    std::string getString() {
        const auto length = get<std::uint32_t>();
        need(length);
        std::string text(reinterpret_cast<const char*>(m_bytes.data() + m_at), length);
        m_at += length;
        return text;
    }
    std::span<const std::uint8_t> take(std::size_t count) {
        need(count);
        auto part = m_bytes.subspan(m_at, count);
        m_at += count;
        return part;
    }
    // A count of items of at least `itemBytes` each, refused when the rest cannot hold that many.
    std::size_t getCount(std::size_t itemBytes) {
        const auto count = get<std::uint32_t>();
        if (itemBytes > 0 && count > remaining() / itemBytes) {
            throw Overrun("a count of " + std::to_string(count) + " items exceeds the " +
                          std::to_string(remaining()) + " bytes left");
        }
        return count;
    }
    std::size_t position() const { return m_at; }
    std::size_t remaining() const { return m_bytes.size() - m_at; }
    bool atEnd() const { return m_at == m_bytes.size(); }

private:
    void need(std::size_t count) const {
        if (count > remaining()) {
            throw Overrun("needs " + std::to_string(count) + " bytes at offset " + std::to_string(m_at) + ", " +
                          std::to_string(remaining()) + " left");
        }
    }

    std::span<const std::uint8_t> m_bytes;
    std::size_t m_at = 0;
};

} // namespace kvscope::trace
