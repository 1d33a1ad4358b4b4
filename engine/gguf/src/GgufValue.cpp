// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/GgufValue.h"

#include "kvscope/gguf/GgufError.h"

#include <array>
#include <sstream>

namespace kvscope::gguf {

std::string valueTypeName(uint32_t id) {
    static const std::array<const char*, 13> names = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32",
                                                      "INT32", "FLOAT32", "BOOL",  "STRING", "ARRAY",
                                                      "UINT64", "INT64", "FLOAT64"};
    return id < names.size() ? names[id] : "type " + std::to_string(id);
}

namespace {

std::string mismatch(const std::string& key, GgufValueType found, const char* wanted) {
    return "metadata `" + key + "` is " + valueTypeName(static_cast<uint32_t>(found)) + ", not " + wanted;
}

} // namespace

bool GgufValue::isInteger() const {
    return std::holds_alternative<uint64_t>(m_value) || std::holds_alternative<int64_t>(m_value);
}

uint64_t GgufValue::asUnsigned(const std::string& key) const {
    if (const auto* u = std::get_if<uint64_t>(&m_value)) {
        return *u;
    }
    if (const auto* i = std::get_if<int64_t>(&m_value); i && *i >= 0) {
        return static_cast<uint64_t>(*i);
    }
    throw GgufError(mismatch(key, m_type, "a non-negative integer"));
}

int64_t GgufValue::asSigned(const std::string& key) const {
    if (const auto* i = std::get_if<int64_t>(&m_value)) {
        return *i;
    }
    if (const auto* u = std::get_if<uint64_t>(&m_value); u && *u <= static_cast<uint64_t>(INT64_MAX)) {
        return static_cast<int64_t>(*u);
    }
    throw GgufError(mismatch(key, m_type, "an integer"));
}

double GgufValue::asNumber(const std::string& key) const {
    if (const auto* d = std::get_if<double>(&m_value)) {
        return *d;
    }
    if (const auto* u = std::get_if<uint64_t>(&m_value)) {
        return static_cast<double>(*u);
    }
    if (const auto* i = std::get_if<int64_t>(&m_value)) {
        return static_cast<double>(*i);
    }
    throw GgufError(mismatch(key, m_type, "a number"));
}

bool GgufValue::asBool(const std::string& key) const {
    if (const auto* b = std::get_if<bool>(&m_value)) {
        return *b;
    }
    throw GgufError(mismatch(key, m_type, "a BOOL"));
}

const std::string& GgufValue::asString(const std::string& key) const {
    if (const auto* s = std::get_if<std::string>(&m_value)) {
        return *s;
    }
    throw GgufError(mismatch(key, m_type, "a STRING"));
}

const GgufValue::Array& GgufValue::asArray(const std::string& key) const {
    if (const auto* a = std::get_if<Array>(&m_value)) {
        return *a;
    }
    throw GgufError(mismatch(key, m_type, "an ARRAY"));
}

std::string GgufValue::summary() const {
    std::ostringstream out;
    if (const auto* a = std::get_if<Array>(&m_value)) {
        out << "[" << valueTypeName(static_cast<uint32_t>(m_elementType)) << " x " << a->size() << "]";
    } else if (const auto* s = std::get_if<std::string>(&m_value)) {
        out << (s->size() > 60 ? s->substr(0, 57) + "..." : *s);
    } else if (const auto* b = std::get_if<bool>(&m_value)) {
        out << (*b ? "true" : "false");
    } else {
        out << asNumber("");
    }
    return out.str();
}

} // namespace kvscope::gguf
