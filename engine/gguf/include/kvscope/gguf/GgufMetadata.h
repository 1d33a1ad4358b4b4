// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/GgufValue.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::gguf {

/// A GGUF file's key-value metadata, with typed getters whose errors name the file, the key and the type
/// found.
class GgufMetadata {
public:
    explicit GgufMetadata(std::string fileName = {}) : m_fileName(std::move(fileName)) {}

    /// False when the key was already present (GGUF keys are unique).
    bool insert(std::string key, GgufValue value);
    const GgufValue* find(const std::string& key) const;
    bool contains(const std::string& key) const { return find(key) != nullptr; }
    const std::map<std::string, GgufValue>& values() const { return m_values; }

    /// Required values: GgufError naming the key when it is missing or of another kind.
    uint64_t unsignedValue(const std::string& key) const;
    double number(const std::string& key) const;
    const std::string& string(const std::string& key) const;
    std::vector<std::string> strings(const std::string& key) const;
    std::vector<double> numbers(const std::string& key) const;
    std::vector<int64_t> integers(const std::string& key) const;

    /// Optional values: empty when the key is absent; a present value of another kind is still an error.
    std::optional<uint64_t> optionalUnsigned(const std::string& key) const;
    std::optional<double> optionalNumber(const std::string& key) const;
    std::optional<bool> optionalBool(const std::string& key) const;
    std::optional<std::string> optionalString(const std::string& key) const;

private:
    const GgufValue& required(const std::string& key) const;
    std::string scoped(const std::string& key) const;

    std::string m_fileName;
    std::map<std::string, GgufValue> m_values;
};

} // namespace kvscope::gguf
