// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kvscope::trace {

// Appends little-endian fixed-width values to a byte vector (session files are little-endian).
class ByteWriter {
public:
    explicit ByteWriter(std::vector<std::uint8_t>& out) : m_out(out) {}

    template <typename T> void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        static_assert(std::endian::native == std::endian::little,
                      "session files are written on little-endian hosts");
        const auto at = m_out.size();
        m_out.resize(at + sizeof(T));
        std::memcpy(m_out.data() + at, &value, sizeof(T));
    }
    /// `values` one after another, as put() would write each (one copy instead of one per value).
    template <typename T> void putArray(const T* values, std::size_t count) {
        static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
        static_assert(std::endian::native == std::endian::little,
                      "session files are written on little-endian hosts");
        const auto at = m_out.size();
        m_out.resize(at + count * sizeof(T));
        if (count > 0) {
            std::memcpy(m_out.data() + at, values, count * sizeof(T));
        }
    }
    void putString(std::string_view text) {
        put<std::uint32_t>(static_cast<std::uint32_t>(text.size()));
        m_out.insert(m_out.end(), text.begin(), text.end());
    }
    // Reserves a u32 to be filled by patchLength once what follows it is written.
    std::size_t reserveLength() {
        put<std::uint32_t>(0);
        return m_out.size();
    }
    void patchLength(std::size_t after) {
        const auto length = static_cast<std::uint32_t>(m_out.size() - after);
        std::memcpy(m_out.data() + after - sizeof(std::uint32_t), &length, sizeof(length));
    }
    std::size_t size() const { return m_out.size(); }

private:
    std::vector<std::uint8_t>& m_out;
};

} // namespace kvscope::trace
