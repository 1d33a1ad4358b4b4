// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::config {

/// A config's `rope_scaling` (or `rope_parameters`): how the rotary frequencies are rescaled.
/// Fields the type does not use stay empty; which types a model accepts is model::Architecture's call.
struct RopeScaling {
    std::string type;                                     ///< `rope_type` (or the older `type`)
    std::optional<double> factor;                         ///< `factor`
    std::optional<double> lowFreqFactor;                  ///< `low_freq_factor` (llama3)
    std::optional<double> highFreqFactor;                 ///< `high_freq_factor` (llama3)
    std::optional<int64_t> originalMaxPositionEmbeddings; ///< `original_max_position_embeddings` (llama3)
};

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

    /// Model dimensions, used by the built-in decoder; not needed by the caches.
    int64_t hiddenSize = 64;
    int64_t numAttentionHeads = 4;
    int64_t numKeyValueHeads = 4;
    std::optional<int64_t> headDim;
    int64_t intermediateSize = 128;
    int64_t vocabSize = 260;
    int64_t maxPositionEmbeddings = 4096;
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    /// Absent, or a `rope_type` other than "default".
    std::optional<RopeScaling> ropeScaling;
    /// `rope_local_base_freq`: the rotary base of Gemma 3's sliding layers.
    std::optional<double> ropeLocalBaseFreq;
    /// `partial_rotary_factor` (top level or in `rope_parameters`): the share of each head's channels that
    /// rotate (Phi-3, Qwen3-Next).
    std::optional<double> partialRotaryFactor;

    /// Conventions of the built-in decoder and of checkpoints (absent = the family's default).
    std::optional<std::string> hiddenAct;          ///< `hidden_activation`, else `hidden_act`/`activation_function`
    std::optional<bool> attentionBias;             ///< `attention_bias`
    std::optional<bool> tieWordEmbeddings;         ///< `tie_word_embeddings`
    std::optional<double> queryPreAttnScalar;      ///< `query_pre_attn_scalar` (Gemma 2/3 attention scale)
    std::optional<double> attnLogitSoftcapping;    ///< `attn_logit_softcapping`
    std::optional<double> finalLogitSoftcapping;   ///< `final_logit_softcapping`

    /// Linear-attention layers (Qwen3-Next's names); absent = Qwen3NextConfig's defaults for qwen3_next, else the
    /// attention's heads and dims.
    int64_t linearConvKernelDim = 4;
    std::optional<int64_t> linearNumKeyHeads;
    std::optional<int64_t> linearNumValueHeads;
    std::optional<int64_t> linearKeyHeadDim;
    std::optional<int64_t> linearValueHeadDim;

    /// Sparse mixture-of-experts MLPs (Qwen3-Next's names); absent = the family's default.
    std::optional<int64_t> numExperts;                   ///< `num_experts`
    std::optional<int64_t> numExpertsPerToken;           ///< `num_experts_per_tok`
    std::optional<int64_t> moeIntermediateSize;          ///< `moe_intermediate_size`
    std::optional<int64_t> sharedExpertIntermediateSize; ///< `shared_expert_intermediate_size`
    std::optional<bool> normTopkProb;                    ///< `norm_topk_prob`
    std::optional<int64_t> decoderSparseStep;            ///< `decoder_sparse_step`
    std::vector<int64_t> mlpOnlyLayers;                  ///< `mlp_only_layers`

    /// Encoder-decoder models (Whisper's names). The decoder's sizes land in the fields above
    /// (`d_model` -> hiddenSize, `decoder_layers` -> numHiddenLayers, ...), since the caches serve the
    /// decoder; these describe the encoder.
    bool isEncoderDecoder = false;
    int64_t encoderLayers = 0;
    int64_t encoderAttentionHeads = 0;
    int64_t encoderFfnDim = 0;
    int64_t maxSourcePositions = 0; ///< encoder positions (after the stride-2 convolution)
    int64_t numMelBins = 0;

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
