// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kvscope::gguf {

/// GGUF's metadata value types, with the ids the file stores.
enum class GgufValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
    U64 = 10, I64 = 11, F64 = 12,
};

/// The name GGUF's spec gives a value type ("UINT32", "ARRAY", ...); "type N" for an id outside the spec.
std::string valueTypeName(uint32_t id);

/// One metadata value: an integer (kept signed or unsigned as stored), a float, a bool, a string or an array
/// of values of one type.
class GgufValue {
public:
    using Array = std::vector<GgufValue>;

    GgufValue() = default;
    GgufValue(GgufValueType type, std::variant<uint64_t, int64_t, double, bool, std::string, Array> value,
              GgufValueType elementType = GgufValueType::U8)
        : m_type(type), m_elementType(elementType), m_value(std::move(value)) {}

    GgufValueType type() const { return m_type; }
    /// The arrays' element type (meaningless for other values).
    GgufValueType elementType() const { return m_elementType; }
    bool isInteger() const;
    bool isNumber() const { return isInteger() || m_type == GgufValueType::F32 || m_type == GgufValueType::F64; }

    /// Each accessor throws GgufError naming `key` and the stored type when the value is of another kind.
    uint64_t asUnsigned(const std::string& key) const;
    int64_t asSigned(const std::string& key) const;
    double asNumber(const std::string& key) const;
    bool asBool(const std::string& key) const;
    const std::string& asString(const std::string& key) const;
    const Array& asArray(const std::string& key) const;

    /// A short rendering for listings: numbers and strings as they are, arrays as `[TYPE x N]`.
    std::string summary() const;

private:
    GgufValueType m_type = GgufValueType::U8;
    GgufValueType m_elementType = GgufValueType::U8;
    std::variant<uint64_t, int64_t, double, bool, std::string, Array> m_value = uint64_t{0};
};

} // namespace kvscope::gguf
