// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/SafetensorsHeader.h"

#include "kvscope/model/ModelError.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvscope::model {

namespace {

/// A JSON integer in [0, INT64_MAX], or nothing: nlohmann's get<> would truncate a float (UB out of
/// range) and wrap a negative number into a huge unsigned one.
bool nonNegativeInteger(const nlohmann::json& value, std::int64_t& out) {
    if (value.is_number_unsigned()) {
        const auto number = value.get<std::uint64_t>();
        if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return false;
        }
        out = static_cast<std::int64_t>(number);
        return true;
    }
    if (value.is_number_integer()) {
        out = value.get<std::int64_t>();
        return out >= 0;
    }
    return false;
}

SafetensorsHeader::Entry readEntry(const nlohmann::json& value, const std::string& what) {
    const auto need = [&](const std::string& detail) {
        return ModelError(
            what + ": " + detail +
            " (a header entry is {\"dtype\": string, \"shape\": [integers >= 0], \"data_offsets\": "
            "[begin, end]})");
    };
    if (!value.is_object()) {
        throw need("the entry is not a JSON object");
    }
    SafetensorsHeader::Entry entry;
    const auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string()) {
        throw need("`dtype` is missing or not a string");
    }
    entry.dtype = dtype->get<std::string>();
    const auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array()) {
        throw need("`shape` is missing or not a list");
    }
    for (const auto& dimension : *shape) {
        std::int64_t size = 0;
        if (!nonNegativeInteger(dimension, size)) {
            throw need("`shape` holds " + dimension.dump() + ", not an integer >= 0");
        }
        entry.shape.push_back(size);
    }
    const auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2) {
        throw need("`data_offsets` is missing or not [begin, end]");
    }
    std::int64_t begin = 0;
    std::int64_t end = 0;
    if (!nonNegativeInteger((*offsets)[0], begin) || !nonNegativeInteger((*offsets)[1], end)) {
        throw need("`data_offsets` holds " + offsets->dump() + ", not two integers >= 0");
    }
    entry.begin = static_cast<std::uint64_t>(begin);
    entry.end = static_cast<std::uint64_t>(end);
    return entry;
}

/// The dtypes a model file may hold, in allowedDtypes()'s order.
const std::vector<std::pair<std::string, std::uint64_t>> kModelDtypes = {{"F32", 4}, {"F16", 2}, {"BF16", 2}};

} // namespace

std::uint64_t SafetensorsHeader::dtypeBytes(const std::string& dtype) {
    for (const auto& [name, bytes] : kModelDtypes) {
        if (name == dtype) {
            return bytes;
        }
    }
    return 0;
}

const char* SafetensorsHeader::allowedDtypes() {
    return "F32, F16, BF16";
}

SafetensorsHeader SafetensorsHeader::parse(std::span<const std::uint8_t> file, const std::string& where) {
    return parse(file, where, kModelDtypes);
}

SafetensorsHeader SafetensorsHeader::parse(std::span<const std::uint8_t> file, const std::string& where,
                                           const std::vector<std::pair<std::string, std::uint64_t>>& dtypes) {
    const auto bytesOf = [&](const std::string& dtype) -> std::uint64_t {
        for (const auto& [name, bytes] : dtypes) {
            if (name == dtype) {
                return bytes;
            }
        }
        return 0;
    };
    std::string allowed;
    for (const auto& [name, bytes] : dtypes) {
        allowed += (allowed.empty() ? "" : ", ") + name;
    }
    const std::uint64_t size = file.size();
    if (size < 8) {
        throw ModelError(where + " is too short (" + std::to_string(size) +
                         " bytes) to hold a header length");
    }
    std::uint64_t headerLength = 0;
    std::memcpy(&headerLength, file.data(), 8);
    if (headerLength > kMaxHeaderBytes) {
        throw ModelError(where + " declares a " + std::to_string(headerLength) + "-byte header; at most " +
                         std::to_string(kMaxHeaderBytes) + " bytes are read");
    }
    if (headerLength > size - 8) {
        throw ModelError(where + " declares a " + std::to_string(headerLength) +
                         "-byte header but holds only " + std::to_string(size - 8) +
                         " bytes after the length (truncated file, or not safetensors?)");
    }
    SafetensorsHeader header;
    header.m_dataStart = 8 + headerLength;
    nlohmann::json document;
    try {
        document = nlohmann::json::parse(file.data() + 8, file.data() + header.m_dataStart);
    } catch (const nlohmann::json::exception& error) {
        throw ModelError(where + " has a header that is not valid JSON: " + error.what());
    }
    if (!document.is_object()) {
        throw ModelError(where + " has a header that is not a JSON object");
    }
    const std::uint64_t dataSize = size - header.m_dataStart;
    for (const auto& [name, value] : document.items()) {
        if (name == "__metadata__") {
            if (value.is_object()) {
                for (const auto& [key, text] : value.items()) {
                    if (text.is_string()) {
                        header.m_metadata[key] = text.get<std::string>();
                    }
                }
            }
            continue;
        }
        const std::string what = where + ", tensor `" + name + "`";
        Entry entry = readEntry(value, what);
        const std::uint64_t elementBytes = bytesOf(entry.dtype);
        if (elementBytes == 0) {
            throw ModelError(what + " has dtype " + entry.dtype + " (allowed: " + allowed + ")");
        }
        // The byte count, and the product of the non-zero dimensions (what strides multiply up to), must
        // fit: a shape whose product wraps around could otherwise match a small span.
        std::uint64_t bytes = elementBytes;
        std::uint64_t extent = 1;
        bool overflow = false;
        for (const std::int64_t dimension : entry.shape) {
            const auto unsignedDimension = static_cast<std::uint64_t>(dimension);
            overflow =
                overflow || __builtin_mul_overflow(bytes, unsignedDimension, &bytes) ||
                __builtin_mul_overflow(extent, std::max<std::uint64_t>(unsignedDimension, 1), &extent) ||
                extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        }
        if (overflow) {
            throw ModelError(what + " has a shape whose size overflows 64 bits");
        }
        if (entry.end < entry.begin || entry.end > dataSize) {
            throw ModelError(what + " has data offsets [" + std::to_string(entry.begin) + ", " +
                             std::to_string(entry.end) + "] outside the " + std::to_string(dataSize) +
                             "-byte data section (truncated file?)");
        }
        if (entry.end - entry.begin != bytes) {
            throw ModelError(what + " spans " + std::to_string(entry.end - entry.begin) +
                             " bytes but its shape and dtype need " + std::to_string(bytes));
        }
        header.m_entries.emplace(name, std::move(entry));
    }
    return header;
}

} // namespace kvscope::model
