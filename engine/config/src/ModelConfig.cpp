// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ModelConfig.h"

#include "kvscope/config/ConfigError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <type_traits>

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

std::optional<double> optionalNumber(const nlohmann::json& doc, const char* key) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number()) {
        throw ConfigError(std::string("config field `") + key + "` must be a number or null, got " + it->dump());
    }
    return it->get<double>();
}

std::optional<bool> optionalBool(const nlohmann::json& doc, const char* key) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_boolean()) {
        throw ConfigError(std::string("config field `") + key + "` must be true, false or null, got " + it->dump());
    }
    return it->get<bool>();
}

template <typename T> void readIfPresent(const nlohmann::json& doc, const char* key, T& target) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return;
    }
    if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer()) {
            throw ConfigError(std::string("config field `") + key + "` must be an integer, got " + it->dump());
        }
    }
    try {
        target = it->get<T>();
    } catch (const nlohmann::json::exception&) {
        throw ConfigError(std::string("config field `") + key + "` has the wrong type: " + it->dump());
    }
}

/// A `rope_scaling` object; "default" (no rescaling) reads as absent.
std::optional<RopeScaling> ropeScalingOf(const nlohmann::json& object, const char* field) {
    if (!object.is_object()) {
        throw ConfigError(std::string("config field `") + field + "` must be an object or null, got " +
                          object.dump());
    }
    RopeScaling scaling;
    for (const char* key : {"rope_type", "type"}) {
        auto it = object.find(key);
        if (it == object.end() || it->is_null()) {
            continue;
        }
        if (!it->is_string()) {
            throw ConfigError(std::string("config field `") + field + "." + key + "` must be a string, got " +
                              it->dump());
        }
        scaling.type = it->get<std::string>();
        break;
    }
    if (scaling.type.empty()) {
        if (object.contains("factor")) {
            throw ConfigError(std::string("config field `") + field + "` sets a factor but no `rope_type`");
        }
        return std::nullopt;
    }
    if (scaling.type == "default") {
        return std::nullopt;
    }
    scaling.factor = optionalNumber(object, "factor");
    scaling.lowFreqFactor = optionalNumber(object, "low_freq_factor");
    scaling.highFreqFactor = optionalNumber(object, "high_freq_factor");
    scaling.originalMaxPositionEmbeddings = optionalInt(object, "original_max_position_embeddings");
    return scaling;
}

/// The layer types the reference's config classes derive when config.json has no `layer_types`
/// (Gemma 2's alternation, Gemma 3's sliding-window pattern, Qwen's `max_window_layers`); empty
/// where the reference leaves the cache to infer them.
std::optional<std::vector<std::string>> familyLayerTypes(const nlohmann::json& doc,
                                                         const ModelConfig& config) {
    const std::string& type = config.modelType;
    const bool derives = type == "gemma2" || type == "gemma3" || type == "gemma3_text" || type == "qwen3_next" ||
                         ((type == "qwen2" || type == "qwen3") && config.slidingWindow);
    if (!derives) {
        return std::nullopt;
    }
    // A bound on the list built here, so that a hostile config cannot make it exhaust memory.
    constexpr int64_t maxLayers = 1 << 16;
    if (config.numHiddenLayers > maxLayers) {
        throw ConfigError("config field `num_hidden_layers` is " + std::to_string(config.numHiddenLayers) +
                          "; at most " + std::to_string(maxLayers) +
                          " layers can be given without `layer_types`");
    }
    const auto layers = static_cast<size_t>(config.numHiddenLayers);
    std::vector<std::string> types;
    if (type == "gemma2" || type == "gemma3" || type == "gemma3_text") {
        int64_t pattern = 2;
        if (type != "gemma2") {
            pattern = 6;
            for (const char* key : {"sliding_window_pattern", "_sliding_window_pattern"}) {
                if (auto value = optionalInt(doc, key)) {
                    pattern = *value;
                    break;
                }
            }
            if (pattern <= 0) {
                throw ConfigError("config field `sliding_window_pattern` must be > 0, got " +
                                  std::to_string(pattern));
            }
        }
        for (size_t layer = 0; layer < layers; ++layer) {
            types.push_back((layer + 1) % static_cast<size_t>(pattern) != 0 ? "sliding_attention"
                                                                            : "full_attention");
        }
        return types;
    }
    if (type == "qwen3_next") {
        // Qwen3NextConfig: every `full_attention_interval`-th layer (4 by default) is full attention.
        const int64_t interval = optionalInt(doc, "full_attention_interval").value_or(4);
        if (interval <= 0) {
            throw ConfigError("config field `full_attention_interval` must be > 0, got " + std::to_string(interval));
        }
        for (size_t layer = 0; layer < layers; ++layer) {
            types.push_back((layer + 1) % static_cast<size_t>(interval) != 0 ? "linear_attention" : "full_attention");
        }
        return types;
    }
    const int64_t firstSliding = optionalInt(doc, "max_window_layers").value_or(28);
    for (size_t layer = 0; layer < layers; ++layer) {
        types.push_back(static_cast<int64_t>(layer) >= firstSliding ? "sliding_attention" : "full_attention");
    }
    return types;
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
    config.ropeLocalBaseFreq = optionalNumber(doc, "rope_local_base_freq");
    config.partialRotaryFactor = optionalNumber(doc, "partial_rotary_factor");
    if (auto it = doc.find("rope_scaling"); it != doc.end() && !it->is_null()) {
        config.ropeScaling = ropeScalingOf(*it, "rope_scaling");
    }
    // Newer configs nest the rotary base and scaling in `rope_parameters`, Gemma 3's per layer type.
    if (auto it = doc.find("rope_parameters"); it != doc.end() && it->is_object()) {
        const auto full = it->find("full_attention");
        const bool perLayerType = full != it->end() && full->is_object();
        const nlohmann::json& global = perLayerType ? *full : *it;
        readIfPresent(global, "rope_theta", config.ropeTheta);
        if (auto factor = optionalNumber(global, "partial_rotary_factor")) {
            config.partialRotaryFactor = factor;
        }
        if (global.contains("rope_type") || global.contains("type")) {
            config.ropeScaling = ropeScalingOf(global, "rope_parameters");
        }
        if (auto local = it->find("sliding_attention");
            perLayerType && local != it->end() && local->is_object()) {
            if (auto theta = optionalNumber(*local, "rope_theta")) {
                config.ropeLocalBaseFreq = theta;
            }
        }
    }
    // Qwen2-style configs carry a `sliding_window` that only applies with `use_sliding_window`;
    // the reference's config class drops it otherwise.
    // Qwen2's and Qwen3's config classes default `use_sliding_window` to false.
    const bool qwen = config.modelType == "qwen2" || config.modelType == "qwen3";
    if (auto use = optionalBool(doc, "use_sliding_window"); use ? !*use : qwen) {
        config.slidingWindow.reset();
    }
    if (!config.layerTypes) {
        config.layerTypes = familyLayerTypes(doc, config);
    }

    for (const char* key : {"hidden_activation", "hidden_act", "activation_function"}) {
        auto it = doc.find(key);
        if (it == doc.end() || it->is_null()) {
            continue;
        }
        if (!it->is_string()) {
            throw ConfigError(std::string("config field `") + key + "` must be a string, got " + it->dump());
        }
        config.hiddenAct = it->get<std::string>();
        break;
    }
    config.attentionBias = optionalBool(doc, "attention_bias");
    config.tieWordEmbeddings = optionalBool(document, "tie_word_embeddings");
    if (!config.tieWordEmbeddings) {
        config.tieWordEmbeddings = optionalBool(doc, "tie_word_embeddings");
    }
    config.queryPreAttnScalar = optionalNumber(doc, "query_pre_attn_scalar");
    config.attnLogitSoftcapping = optionalNumber(doc, "attn_logit_softcapping");
    config.finalLogitSoftcapping = optionalNumber(doc, "final_logit_softcapping");

    readIfPresent(doc, "linear_conv_kernel_dim", config.linearConvKernelDim);
    config.linearNumKeyHeads = optionalInt(doc, "linear_num_key_heads");
    config.linearNumValueHeads = optionalInt(doc, "linear_num_value_heads");
    config.linearKeyHeadDim = optionalInt(doc, "linear_key_head_dim");
    config.linearValueHeadDim = optionalInt(doc, "linear_value_head_dim");

    config.numExperts = optionalInt(doc, "num_experts");
    config.numExpertsPerToken = optionalInt(doc, "num_experts_per_tok");
    config.moeIntermediateSize = optionalInt(doc, "moe_intermediate_size");
    config.sharedExpertIntermediateSize = optionalInt(doc, "shared_expert_intermediate_size");
    config.normTopkProb = optionalBool(doc, "norm_topk_prob");
    config.decoderSparseStep = optionalInt(doc, "decoder_sparse_step");
    if (auto it = doc.find("mlp_only_layers"); it != doc.end() && !it->is_null()) {
        if (!it->is_array()) {
            throw ConfigError("config field `mlp_only_layers` must be a list of layer indices, got " + it->dump());
        }
        for (const auto& entry : *it) {
            if (!entry.is_number_integer()) {
                throw ConfigError("config field `mlp_only_layers` must hold integers, got " + entry.dump());
            }
            config.mlpOnlyLayers.push_back(entry.get<int64_t>());
        }
    }

    config.isEncoderDecoder = optionalBool(doc, "is_encoder_decoder").value_or(false);
    if (doc.contains("d_model") && doc.contains("decoder_layers")) {
        // Whisper-style names: the decoder is what the caches serve.
        readIfPresent(doc, "d_model", config.hiddenSize);
        readIfPresent(doc, "decoder_layers", config.numHiddenLayers);
        readIfPresent(doc, "decoder_attention_heads", config.numAttentionHeads);
        config.numKeyValueHeads = config.numAttentionHeads;
        readIfPresent(doc, "decoder_ffn_dim", config.intermediateSize);
        readIfPresent(doc, "max_target_positions", config.maxPositionEmbeddings);
        readIfPresent(doc, "encoder_layers", config.encoderLayers);
        config.encoderAttentionHeads = config.numAttentionHeads;
        readIfPresent(doc, "encoder_attention_heads", config.encoderAttentionHeads);
        readIfPresent(doc, "encoder_ffn_dim", config.encoderFfnDim);
        readIfPresent(doc, "max_source_positions", config.maxSourcePositions);
        readIfPresent(doc, "num_mel_bins", config.numMelBins);
    }
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
    if (ropeScaling) {
        nlohmann::json scaling = {{"rope_type", ropeScaling->type}};
        if (ropeScaling->factor) {
            scaling["factor"] = *ropeScaling->factor;
        }
        if (ropeScaling->lowFreqFactor) {
            scaling["low_freq_factor"] = *ropeScaling->lowFreqFactor;
        }
        if (ropeScaling->highFreqFactor) {
            scaling["high_freq_factor"] = *ropeScaling->highFreqFactor;
        }
        if (ropeScaling->originalMaxPositionEmbeddings) {
            scaling["original_max_position_embeddings"] = *ropeScaling->originalMaxPositionEmbeddings;
        }
        doc["rope_scaling"] = scaling;
    }
    if (hiddenAct) {
        doc["hidden_act"] = *hiddenAct;
    }
    auto putFlag = [&doc](const char* key, const std::optional<bool>& value) {
        if (value) {
            doc[key] = *value;
        }
    };
    putFlag("attention_bias", attentionBias);
    putFlag("tie_word_embeddings", tieWordEmbeddings);
    auto putNumber = [&doc](const char* key, const std::optional<double>& value) {
        if (value) {
            doc[key] = *value;
        }
    };
    putNumber("query_pre_attn_scalar", queryPreAttnScalar);
    putNumber("attn_logit_softcapping", attnLogitSoftcapping);
    putNumber("final_logit_softcapping", finalLogitSoftcapping);
    putNumber("rope_local_base_freq", ropeLocalBaseFreq);
    putNumber("partial_rotary_factor", partialRotaryFactor);
    doc["linear_conv_kernel_dim"] = linearConvKernelDim;
    putOptional("linear_num_key_heads", linearNumKeyHeads);
    putOptional("linear_num_value_heads", linearNumValueHeads);
    putOptional("linear_key_head_dim", linearKeyHeadDim);
    putOptional("linear_value_head_dim", linearValueHeadDim);
    putOptional("num_experts", numExperts);
    putOptional("num_experts_per_tok", numExpertsPerToken);
    putOptional("moe_intermediate_size", moeIntermediateSize);
    putOptional("shared_expert_intermediate_size", sharedExpertIntermediateSize);
    putFlag("norm_topk_prob", normTopkProb);
    putOptional("decoder_sparse_step", decoderSparseStep);
    if (!mlpOnlyLayers.empty()) {
        doc["mlp_only_layers"] = mlpOnlyLayers;
    }
    if (isEncoderDecoder || encoderLayers > 0) {
        // Whisper's names, so that fromJson reads the decoder sizes back from them.
        doc["is_encoder_decoder"] = isEncoderDecoder;
        doc["d_model"] = hiddenSize;
        doc["decoder_layers"] = numHiddenLayers;
        doc["decoder_attention_heads"] = numAttentionHeads;
        doc["decoder_ffn_dim"] = intermediateSize;
        doc["max_target_positions"] = maxPositionEmbeddings;
        doc["encoder_layers"] = encoderLayers;
        doc["encoder_attention_heads"] = encoderAttentionHeads;
        doc["encoder_ffn_dim"] = encoderFfnDim;
        doc["max_source_positions"] = maxSourcePositions;
        doc["num_mel_bins"] = numMelBins;
    }
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
