// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace kvscope::tokenizer {

/// A tokenizer.json decoder (ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence):
/// turns token strings back into text pieces, which decode joins.
class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decodeChain(std::vector<std::string>& tokens) const = 0;

    /// null gives nullptr; unknown types are refused by name. `addedContents` are the added tokens'
    /// texts: the ByteLevel decoder passes them through verbatim instead of mapping them to bytes.
    static std::unique_ptr<Decoder> fromJson(const nlohmann::json& json,
                                             const std::unordered_set<std::string>* addedContents);
};

} // namespace kvscope::tokenizer
