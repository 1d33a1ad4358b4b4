// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionMetadata.h"

#include "kvscope/trace/SessionError.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace kvscope::trace {

namespace {

nlohmann::json objectOrEmpty(const std::string& text, const char* field) {
    if (text.empty()) {
        return nlohmann::json::object();
    }
    nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        throw SessionError(std::string("session metadata: ") + field + " is not a JSON object: " + text.substr(0, 80));
    }
    return value;
}

template <typename T>
void readField(const nlohmann::json& json, const char* key, T& target, bool (nlohmann::json::*isType)() const,
               const char* typeName) {
    const auto found = json.find(key);
    if (found == json.end() || found->is_null()) {
        return;
    }
    if (!((*found).*isType)()) {
        throw SessionError(std::string("session metadata: \"") + key + "\" must be " + typeName + ", found " +
                           found->type_name());
    }
    target = found->get<T>();
}

/// Format 1.0 files: chunked layers as the model config names them (a multimodal config keeps them in
/// text_config).
std::vector<std::int64_t> chunkSizesFromModelConfig(const nlohmann::json& config) {
    if (!config.is_object()) {
        return {};
    }
    const nlohmann::json* source = &config;
    if (!config.contains("layer_types")) {
        if (const auto text = config.find("text_config"); text != config.end() && text->is_object()) {
            source = &*text;
        }
    }
    const auto types = source->find("layer_types");
    const auto chunk = source->find("attention_chunk_size");
    if (types == source->end() || !types->is_array() || chunk == source->end() || !chunk->is_number_integer()) {
        return {};
    }
    std::vector<std::int64_t> sizes;
    for (const nlohmann::json& type : *types) {
        sizes.push_back(type.is_string() && type.get<std::string>() == "chunked_attention" ? chunk->get<std::int64_t>()
                                                                                          : 0);
    }
    return sizes;
}

} // namespace

std::string SessionMetadata::toJson() const {
    nlohmann::json json{
        {"kvscope_version", kvscopeVersion},
        {"model", model},
        {"model_config", objectOrEmpty(modelConfigJson, "model_config")},
        {"cache", cacheKind},
        {"cache_settings", objectOrEmpty(cacheSettingsJson, "cache_settings")},
        {"device", device},
        {"seed", seed},
        {"prompt", prompt},
        {"created_unix_ns", createdUnixNs},
        {"attention_chunk_sizes", attentionChunkSizes},
        {"tokenizer", tokenizer},
        {"prompt_pieces", promptPieces},
    };
    // Invalid UTF-8 in a prompt must not make the header unwritable.
    return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SessionMetadata SessionMetadata::fromJson(std::string_view text) {
    const nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        throw SessionError("session metadata is not a JSON object");
    }
    SessionMetadata metadata;
    using J = nlohmann::json;
    readField(json, "kvscope_version", metadata.kvscopeVersion, &J::is_string, "a string");
    readField(json, "model", metadata.model, &J::is_string, "a string");
    readField(json, "cache", metadata.cacheKind, &J::is_string, "a string");
    readField(json, "device", metadata.device, &J::is_string, "a string");
    readField(json, "prompt", metadata.prompt, &J::is_string, "a string");
    readField(json, "tokenizer", metadata.tokenizer, &J::is_string, "a string");
    if (const auto pieces = json.find("prompt_pieces"); pieces != json.end() && !pieces->is_null()) {
        if (!pieces->is_array() || !std::all_of(pieces->begin(), pieces->end(),
                                                [](const nlohmann::json& piece) { return piece.is_string(); })) {
            throw SessionError("session metadata: \"prompt_pieces\" must be an array of strings");
        }
        metadata.promptPieces = pieces->get<std::vector<std::string>>();
    }
    readField(json, "seed", metadata.seed, &J::is_number_unsigned, "an unsigned integer");
    readField(json, "created_unix_ns", metadata.createdUnixNs, &J::is_number_integer, "an integer");
    for (const auto& [key, target] : {std::pair<const char*, std::string*>{"model_config", &metadata.modelConfigJson},
                                      {"cache_settings", &metadata.cacheSettingsJson}}) {
        const auto found = json.find(key);
        if (found == json.end() || found->is_null()) {
            continue;
        }
        if (!found->is_object()) {
            throw SessionError(std::string("session metadata: \"") + key + "\" must be a JSON object, found " +
                               found->type_name());
        }
        *target = found->dump();
    }
    if (const auto chunks = json.find("attention_chunk_sizes"); chunks != json.end() && !chunks->is_null()) {
        if (!chunks->is_array() || !std::all_of(chunks->begin(), chunks->end(),
                                                [](const nlohmann::json& size) { return size.is_number_integer(); })) {
            throw SessionError("session metadata: \"attention_chunk_sizes\" must be an array of integers");
        }
        metadata.attentionChunkSizes = chunks->get<std::vector<std::int64_t>>();
    } else {
        metadata.attentionChunkSizes = chunkSizesFromModelConfig(json.value("model_config", nlohmann::json::object()));
    }
    return metadata;
}

} // namespace kvscope::trace
