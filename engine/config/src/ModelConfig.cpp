#include "kvscope/config/ModelConfig.h"

#include "kvscope/config/ConfigError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace kvscope::config {
namespace {

std::optional<int64_t> optionalInt(const nlohmann::json& doc, const char* key) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number_integer()) {
        throw ConfigError(std::string("config field `") + key + "` must be an integer or null, got " + it->dump());
    }
    return it->get<int64_t>();
}

template <typename T> void readIfPresent(const nlohmann::json& doc, const char* key, T& target) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return;
    }
    try {
        target = it->get<T>();
    } catch (const nlohmann::json::exception&) {
        throw ConfigError(std::string("config field `") + key + "` has the wrong type: " + it->dump());
    }
}

} // namespace

ModelConfig ModelConfig::fromJson(const nlohmann::json& document) {
    if (!document.is_object()) {
        throw ConfigError("a model config must be a JSON object, got " + std::string(document.type_name()));
    }
    const nlohmann::json& doc =
        document.contains("text_config") && document["text_config"].is_object() ? document["text_config"] : document;
    ModelConfig config;
    readIfPresent(document, "model_type", config.modelType);
    readIfPresent(doc, "num_hidden_layers", config.numHiddenLayers);
    if (config.numHiddenLayers < 0) {
        throw ConfigError("config field `num_hidden_layers` must be >= 0, got " +
                          std::to_string(config.numHiddenLayers));
    }
    if (auto it = doc.find("layer_types"); it != doc.end() && !it->is_null()) {
        if (!it->is_array()) {
            throw ConfigError("config field `layer_types` must be a list of strings, got " + it->dump());
        }
        std::vector<std::string> types;
        for (const auto& entry : *it) {
            if (!entry.is_string()) {
                throw ConfigError("config field `layer_types` must hold strings, got " + entry.dump());
            }
            types.push_back(entry.get<std::string>());
        }
        config.layerTypes = std::move(types);
    }
    config.slidingWindow = optionalInt(doc, "sliding_window");
    config.attentionChunkSize = optionalInt(doc, "attention_chunk_size");
    config.numKvSharedLayers = optionalInt(doc, "num_kv_shared_layers");
    readIfPresent(doc, "hidden_size", config.hiddenSize);
    readIfPresent(doc, "num_attention_heads", config.numAttentionHeads);
    config.numKeyValueHeads = config.numAttentionHeads;
    readIfPresent(doc, "num_key_value_heads", config.numKeyValueHeads);
    config.headDim = optionalInt(doc, "head_dim");
    readIfPresent(doc, "intermediate_size", config.intermediateSize);
    readIfPresent(doc, "vocab_size", config.vocabSize);
    readIfPresent(doc, "max_position_embeddings", config.maxPositionEmbeddings);
    readIfPresent(doc, "rms_norm_eps", config.rmsNormEps);
    readIfPresent(doc, "rope_theta", config.ropeTheta);
    return config;
}

ModelConfig ModelConfig::fromFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        throw ConfigError("cannot open model config `" + path.string() + "`");
    }
    try {
        return fromJson(nlohmann::json::parse(in));
    } catch (const nlohmann::json::parse_error& error) {
        throw ConfigError("model config `" + path.string() + "` is not valid JSON: " + error.what());
    } catch (const ConfigError& error) {
        throw ConfigError("model config `" + path.string() + "`: " + error.what());
    }
}

nlohmann::json ModelConfig::toJson() const {
    nlohmann::json doc;
    if (!modelType.empty()) {
        doc["model_type"] = modelType;
    }
    doc["num_hidden_layers"] = numHiddenLayers;
    if (layerTypes) {
        doc["layer_types"] = *layerTypes;
    }
    auto putOptional = [&doc](const char* key, const std::optional<int64_t>& value) {
        if (value) {
            doc[key] = *value;
        }
    };
    putOptional("sliding_window", slidingWindow);
    putOptional("attention_chunk_size", attentionChunkSize);
    putOptional("num_kv_shared_layers", numKvSharedLayers);
    putOptional("head_dim", headDim);
    doc["hidden_size"] = hiddenSize;
    doc["num_attention_heads"] = numAttentionHeads;
    doc["num_key_value_heads"] = numKeyValueHeads;
    doc["intermediate_size"] = intermediateSize;
    doc["vocab_size"] = vocabSize;
    doc["max_position_embeddings"] = maxPositionEmbeddings;
    doc["rms_norm_eps"] = rmsNormEps;
    doc["rope_theta"] = ropeTheta;
    return doc;
}

int64_t ModelConfig::effectiveHeadDim() const {
    if (headDim) {
        return *headDim;
    }
    if (numAttentionHeads <= 0 || hiddenSize % numAttentionHeads != 0) {
        throw ConfigError("hidden_size (" + std::to_string(hiddenSize) + ") must be divisible by num_attention_heads (" +
                          std::to_string(numAttentionHeads) + ") when head_dim is not set");
    }
    return hiddenSize / numAttentionHeads;
}

std::vector<std::string> ModelConfig::dynamicLayerTypes() const {
    if (layerTypes) {
        return withoutSharedLayers(*layerTypes);
    }
    // The reference tests `sliding_window or attention_chunk_size`: a zero window counts as absent.
    const bool sliding = (slidingWindow && *slidingWindow != 0) || attentionChunkSize.has_value();
    return withoutSharedLayers(std::vector<std::string>(static_cast<size_t>(numHiddenLayers),
                                                        sliding ? "sliding_attention" : "full_attention"));
}

std::vector<std::string> ModelConfig::staticLayerTypes() const {
    if (layerTypes) {
        return withoutSharedLayers(*layerTypes);
    }
    const char* kind = slidingWindow ? "sliding_attention"
                       : attentionChunkSize ? "chunked_attention"
                                            : "full_attention";
    return withoutSharedLayers(std::vector<std::string>(static_cast<size_t>(numHiddenLayers), kind));
}

std::vector<std::string> ModelConfig::withoutSharedLayers(std::vector<std::string> types) const {
    if (!numKvSharedLayers) {
        return types;
    }
    // Python's `types[:-n]`: n == 0 keeps nothing, a negative n keeps the first |n|, n >= size keeps nothing.
    const auto size = static_cast<int64_t>(types.size());
    const int64_t n = *numKvSharedLayers;
    int64_t keep = n > 0 ? size - n : (n == 0 ? 0 : -n);
    keep = std::clamp<int64_t>(keep, 0, size);
    types.resize(static_cast<size_t>(keep));
    return types;
}

} // namespace kvscope::config
