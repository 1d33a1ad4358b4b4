// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/GgufMetadata.h"

#include "kvscope/gguf/GgufError.h"

namespace kvscope::gguf {

bool GgufMetadata::insert(std::string key, GgufValue value) {
    return m_values.emplace(std::move(key), std::move(value)).second;
}

const GgufValue* GgufMetadata::find(const std::string& key) const {
    auto it = m_values.find(key);
    return it == m_values.end() ? nullptr : &it->second;
}

std::string GgufMetadata::scoped(const std::string& key) const {
    return m_fileName.empty() ? key : key + "` of `" + m_fileName;
}

const GgufValue& GgufMetadata::required(const std::string& key) const {
    const GgufValue* value = find(key);
    if (value == nullptr) {
        throw GgufError("GGUF file `" + m_fileName + "` has no metadata `" + key +
                        "`, which kvscope needs to read this model");
    }
    return *value;
}

uint64_t GgufMetadata::unsignedValue(const std::string& key) const { return required(key).asUnsigned(scoped(key)); }
double GgufMetadata::number(const std::string& key) const { return required(key).asNumber(scoped(key)); }
const std::string& GgufMetadata::string(const std::string& key) const { return required(key).asString(scoped(key)); }

std::vector<std::string> GgufMetadata::strings(const std::string& key) const {
    std::vector<std::string> out;
    for (const GgufValue& element : required(key).asArray(scoped(key))) {
        out.push_back(element.asString(scoped(key) + "` element"));
    }
    return out;
}

std::vector<double> GgufMetadata::numbers(const std::string& key) const {
    std::vector<double> out;
    for (const GgufValue& element : required(key).asArray(scoped(key))) {
        out.push_back(element.asNumber(scoped(key) + "` element"));
    }
    return out;
}

std::vector<int64_t> GgufMetadata::integers(const std::string& key) const {
    std::vector<int64_t> out;
    for (const GgufValue& element : required(key).asArray(scoped(key))) {
        out.push_back(element.asSigned(scoped(key) + "` element"));
    }
    return out;
}

std::optional<uint64_t> GgufMetadata::optionalUnsigned(const std::string& key) const {
    const GgufValue* value = find(key);
    return value ? std::optional(value->asUnsigned(scoped(key))) : std::nullopt;
}

std::optional<double> GgufMetadata::optionalNumber(const std::string& key) const {
    const GgufValue* value = find(key);
    return value ? std::optional(value->asNumber(scoped(key))) : std::nullopt;
}

std::optional<bool> GgufMetadata::optionalBool(const std::string& key) const {
    const GgufValue* value = find(key);
    return value ? std::optional(value->asBool(scoped(key))) : std::nullopt;
}

std::optional<std::string> GgufMetadata::optionalString(const std::string& key) const {
    const GgufValue* value = find(key);
    return value ? std::optional(value->asString(scoped(key))) : std::nullopt;
}

} // namespace kvscope::gguf
