// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::trace {

/// What a session file says about the run that produced it: the header's JSON metadata.
struct SessionMetadata {
    std::string kvscopeVersion;
    std::string model; ///< preset name, config.json path or checkpoint folder
    std::string modelConfigJson = "{}"; ///< the model's configuration, a JSON object
    std::string cacheKind; ///< dynamic, static, quantized, offloaded, ...
    std::string cacheSettingsJson = "{}"; ///< the cache's options, a JSON object
    std::string device = "cpu"; ///< cpu, cuda:0
    std::uint64_t seed = 0;
    std::string prompt;
    std::int64_t createdUnixNs = 0;
    /// Per layer: the chunk of a chunked-attention layer, 0 for every other layer (format 1.1; read
    /// from model_config for 1.0 files). Sliding windows need no entry: events carry them.
    std::vector<std::int64_t> attentionChunkSizes;
    /// Format 1.1: what turned text into tokens ("bytes", or a tokenizer's source), and the text piece
    /// of each prompt token, position by position (later tokens' pieces are in their steps' events).
    std::string tokenizer;
    std::vector<std::string> promptPieces;

    bool operator==(const SessionMetadata&) const = default;

    /// The header's JSON text; fromJson refuses text that is not a JSON object or holds a field of
    /// the wrong type (SessionError naming the field). Unknown keys are ignored, missing ones keep
    /// their defaults, so newer writers stay readable.
    /// A file without attention_chunk_sizes (format 1.0) gets them from model_config's layer_types and
    /// attention_chunk_size (or text_config's, for multimodal configs).
    std::string toJson() const;
    static SessionMetadata fromJson(std::string_view json);
};

} // namespace kvscope::trace
