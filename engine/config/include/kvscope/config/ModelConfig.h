#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::config {

/// The decoder text configuration of a model, as Hugging Face's config.json gives it.
///
/// Optional fields stay empty when the file does not set them (or sets them to null), because the
/// reference distinguishes "absent" from any value (e.g. `num_kv_shared_layers`).
struct ModelConfig {
    std::string modelType;
    int64_t numHiddenLayers = 1;
    std::optional<std::vector<std::string>> layerTypes;
    std::optional<int64_t> slidingWindow;
    std::optional<int64_t> attentionChunkSize;
    std::optional<int64_t> numKvSharedLayers;

    // Model dimensions, used by the built-in decoder; not needed by the caches.
    int64_t hiddenSize = 64;
    int64_t numAttentionHeads = 4;
    int64_t numKeyValueHeads = 4;
    std::optional<int64_t> headDim;
    int64_t intermediateSize = 128;
    int64_t vocabSize = 260;
    int64_t maxPositionEmbeddings = 4096;
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;

    /// Reads a config.json document; for multimodal configs the nested `text_config` is used, as
    /// the reference's `get_text_config(decoder=True)` does.
    static ModelConfig fromJson(const nlohmann::json& document);
    /// Reads and parses a config.json file; throws ConfigError naming the file on failure.
    static ModelConfig fromFile(const std::filesystem::path& path);
    nlohmann::json toJson() const;

    /// Head dimension: `head_dim` when set, else hidden_size / num_attention_heads.
    int64_t effectiveHeadDim() const;
    /// Layer types as the reference's DynamicCache infers them when `layer_types` is absent.
    std::vector<std::string> dynamicLayerTypes() const;
    /// Layer types as the reference's StaticCache infers them when `layer_types` is absent.
    std::vector<std::string> staticLayerTypes() const;
    /// Drops the trailing shared-KV layers the way the reference does (`layer_types[:-n]`).
    std::vector<std::string> withoutSharedLayers(std::vector<std::string> types) const;
};

} // namespace kvscope::config
