// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/Architecture.h"

#include "kvscope/model/ModelError.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvscope::model {
namespace {

ModelFamily familyOf(const std::string& modelType) {
    static const std::map<std::string, ModelFamily> families = {
        {"", ModelFamily::Llama},
        {"llama", ModelFamily::Llama},
        {"mistral", ModelFamily::Llama},
        {"llama4", ModelFamily::Llama},
        {"llama4_text", ModelFamily::Llama},
        {"qwen3_next", ModelFamily::Qwen3Next},
        {"qwen2", ModelFamily::Qwen2},
        {"qwen3", ModelFamily::Qwen3},
        {"phi3", ModelFamily::Phi3},
        {"gemma", ModelFamily::Gemma},
        {"gemma2", ModelFamily::Gemma},
        {"gemma3", ModelFamily::Gemma},
        {"gemma3_text", ModelFamily::Gemma},
        {"gemma3n", ModelFamily::Gemma},
        {"gemma3n_text", ModelFamily::Gemma},
        {"whisper", ModelFamily::Whisper},
    };
    auto it = families.find(modelType);
    if (it == families.end()) {
        throw ModelError("model_type `" + modelType + "` is not built into kvscope (allowed: " +
                         Architecture::allowedModelTypes() + ")");
    }
    return it->second;
}

Activation activationOf(const std::optional<std::string>& name, ModelFamily family) {
    if (!name) {
        return family == ModelFamily::Gemma     ? Activation::GeluTanh
               : family == ModelFamily::Whisper ? Activation::Gelu
                                                : Activation::Silu;
    }
    if (*name == "silu" || *name == "swish") {
        return Activation::Silu;
    }
    if (*name == "gelu") {
        // Gemma's modelling code uses the tanh approximation whatever the config says.
        return family == ModelFamily::Gemma ? Activation::GeluTanh : Activation::Gelu;
    }
    if (*name == "gelu_pytorch_tanh" || *name == "gelu_new" || *name == "gelu_fast") {
        return Activation::GeluTanh;
    }
    throw ModelError("hidden activation `" + *name + "` is not supported (allowed: silu, swish, gelu, gelu_pytorch_tanh, "
                                                     "gelu_new, gelu_fast)");
}

AttentionKind kindOf(const std::string& type) {
    if (type == "full_attention") {
        return AttentionKind::FullAttention;
    }
    if (type == "sliding_attention") {
        return AttentionKind::SlidingAttention;
    }
    if (type == "chunked_attention") {
        return AttentionKind::ChunkedAttention;
    }
    if (type == "linear_attention") {
        return AttentionKind::LinearAttention;
    }
    if (type == "hybrid") {
        return AttentionKind::Hybrid;
    }
    throw ModelError("layer type `" + type +
                     "` is not built into kvscope's decoder (allowed: full_attention, sliding_attention, "
                     "chunked_attention, linear_attention, hybrid)");
}

void requirePositive(int64_t value, const char* field) {
    if (value <= 0) {
        throw ModelError(std::string("config field `") + field + "` must be > 0, got " + std::to_string(value));
    }
}

void requirePositive(double value, const char* field) {
    if (!(value > 0.0)) {
        throw ModelError(std::string("config field `") + field + "` must be > 0, got " +
                         std::to_string(value));
    }
}

/// Refuses a RoPE scaling kvscope does not compute, or one that lacks what its type needs.
void checkRopeScaling(const std::optional<config::RopeScaling>& scaling) {
    if (!scaling) {
        return;
    }
    const std::string& type = scaling->type;
    if (type != "linear" && type != "llama3") {
        throw ModelError("rope_scaling type `" + type +
                         "` is not supported (allowed: " + Architecture::allowedRopeScalings() + ")");
    }
    if (!scaling->factor) {
        throw ModelError("rope_scaling type `" + type + "` needs a `factor`");
    }
    requirePositive(*scaling->factor, "rope_scaling.factor");
    if (type == "llama3") {
        if (!scaling->lowFreqFactor || !scaling->highFreqFactor || !scaling->originalMaxPositionEmbeddings) {
            throw ModelError("rope_scaling type `llama3` needs `low_freq_factor`, `high_freq_factor` and "
                             "`original_max_position_embeddings`");
        }
        requirePositive(*scaling->lowFreqFactor, "rope_scaling.low_freq_factor");
        requirePositive(*scaling->originalMaxPositionEmbeddings,
                        "rope_scaling.original_max_position_embeddings");
        if (!(*scaling->highFreqFactor > *scaling->lowFreqFactor)) {
            throw ModelError("rope_scaling.high_freq_factor (" + std::to_string(*scaling->highFreqFactor) +
                             ") must be greater than low_freq_factor (" +
                             std::to_string(*scaling->lowFreqFactor) + ")");
        }
    }
}

/// The rotating channels of a head: all of them, or the `partial_rotary_factor` share of Phi-3 and Qwen3-Next
/// (whose config class makes it 0.25 when absent).
int64_t rotaryDimOf(const config::ModelConfig& config, ModelFamily family, int64_t headDim) {
    const std::optional<double> given =
        family == ModelFamily::Qwen3Next ? config.partialRotaryFactor.value_or(0.25) : config.partialRotaryFactor;
    if (!given || *given == 1.0) {
        return headDim;
    }
    if (family != ModelFamily::Phi3 && family != ModelFamily::Qwen3Next) {
        throw ModelError("config field `partial_rotary_factor` is supported for model_type phi3 and qwen3_next only "
                         "(got " + std::to_string(*given) + " for `" + config.modelType + "`)");
    }
    const double factor = *given;
    const auto dim = static_cast<int64_t>(static_cast<double>(headDim) * factor);
    if (!(factor > 0.0 && factor <= 1.0) || dim <= 0 || dim % 2 != 0) {
        throw ModelError(
            "config field `partial_rotary_factor` must be in (0, 1] and give an even number of rotating "
            "channels (head_dim " +
            std::to_string(headDim) + " x " + std::to_string(factor) + ")");
    }
    return dim;
}

} // namespace

const char* Architecture::allowedModelTypes() {
    return "llama, mistral, llama4, llama4_text, qwen2, qwen3, qwen3_next, phi3, gemma, gemma2, gemma3, "
           "gemma3_text, "
           "gemma3n, gemma3n_text, whisper (or none)";
}

const char* Architecture::allowedRopeScalings() {
    return "default, linear, llama3";
}

bool Architecture::usesLocalRotary(int64_t layer) const {
    return m_localRopeTheta > 0.0 && attentionKind(layer) == AttentionKind::SlidingAttention;
}

Architecture::Architecture(config::ModelConfig config) : m_config(std::move(config)) {
    const config::ModelConfig& c = m_config;
    m_family = familyOf(c.modelType);
    m_activation = activationOf(c.hiddenAct, m_family);
    requirePositive(c.numHiddenLayers, "num_hidden_layers");
    requirePositive(c.hiddenSize, "hidden_size");
    requirePositive(c.numAttentionHeads, "num_attention_heads");
    requirePositive(c.numKeyValueHeads, "num_key_value_heads");
    requirePositive(c.intermediateSize, "intermediate_size");
    requirePositive(c.vocabSize, "vocab_size");
    if (c.numAttentionHeads % c.numKeyValueHeads != 0) {
        throw ModelError("num_attention_heads (" + std::to_string(c.numAttentionHeads) +
                         ") must be a multiple of num_key_value_heads (" + std::to_string(c.numKeyValueHeads) + ")");
    }
    try {
        m_headDim = c.effectiveHeadDim();
    } catch (const std::exception& error) {
        throw ModelError(error.what());
    }
    requirePositive(m_headDim, "head_dim");
    if (m_headDim % 2 != 0) {
        throw ModelError("head_dim must be even for rotary positions, got " + std::to_string(m_headDim));
    }

    if (m_family == ModelFamily::Phi3 && c.attentionBias.value_or(false)) {
        throw ModelError("model_type phi3 has no attention biases (config field `attention_bias` must be "
                         "false or absent)");
    }
    m_qkvBias = m_family == ModelFamily::Qwen2 || c.attentionBias.value_or(false);
    m_outputBias = c.attentionBias.value_or(false);
    m_tiedEmbeddings =
        c.tieWordEmbeddings.value_or(m_family == ModelFamily::Gemma || m_family == ModelFamily::Whisper);
    m_attentionScale = 1.0 / std::sqrt(c.queryPreAttnScalar ? *c.queryPreAttnScalar : static_cast<double>(m_headDim));
    const bool gemma3 = c.modelType == "gemma3" || c.modelType == "gemma3_text";
    m_sandwichNorms = gemma3 || c.modelType == "gemma2";
    m_queryKeyNorms = gemma3 || m_family == ModelFamily::Qwen3 || m_family == ModelFamily::Qwen3Next;
    if (gemma3) {
        // Gemma3TextConfig's default local base.
        m_localRopeTheta = c.ropeLocalBaseFreq.value_or(10000.0);
        requirePositive(m_localRopeTheta, "rope_local_base_freq");
    }
    checkRopeScaling(c.ropeScaling);
    m_rotaryDim = rotaryDimOf(c, m_family, m_headDim);

    const auto layers = static_cast<size_t>(c.numHiddenLayers);
    if (c.layerTypes) {
        if (c.layerTypes->size() != layers) {
            throw ModelError("config field `layer_types` has " + std::to_string(c.layerTypes->size()) +
                             " entries but `num_hidden_layers` is " + std::to_string(layers) + " (they must match)");
        }
        for (const std::string& type : *c.layerTypes) {
            m_attentionKinds.push_back(kindOf(type));
        }
    } else {
        // Without `layer_types`, the reference's model classes make every layer sliding when a window
        // is set and chunked when only a chunk size is.
        const AttentionKind kind = c.slidingWindow && *c.slidingWindow > 0 ? AttentionKind::SlidingAttention
                               : c.attentionChunkSize                  ? AttentionKind::ChunkedAttention
                                                                       : AttentionKind::FullAttention;
        m_attentionKinds.assign(layers, kind);
    }
    for (size_t layer = 0; layer < layers; ++layer) {
        const AttentionKind kind = m_attentionKinds[layer];
        if (kind == AttentionKind::SlidingAttention && (!c.slidingWindow || *c.slidingWindow <= 0)) {
            throw ModelError("layer " + std::to_string(layer) +
                             " is sliding_attention but `sliding_window` is not set to a positive value");
        }
        if (kind == AttentionKind::ChunkedAttention && (!c.attentionChunkSize || *c.attentionChunkSize <= 0)) {
            throw ModelError("layer " + std::to_string(layer) +
                             " is chunked_attention but `attention_chunk_size` is not set to a positive value");
        }
        if (m_family == ModelFamily::Whisper && kind != AttentionKind::FullAttention) {
            throw ModelError("whisper decoder layers must be full_attention, layer " + std::to_string(layer) + " is " +
                             attentionKindName(kind));
        }
    }

    m_numShared = c.numKvSharedLayers.value_or(0);
    if (m_numShared < 0 || m_numShared >= c.numHiddenLayers) {
        throw ModelError("config field `num_kv_shared_layers` must be between 0 and num_hidden_layers - 1 (" +
                         std::to_string(c.numHiddenLayers - 1) + "), got " + std::to_string(m_numShared));
    }
    const int64_t firstShared = c.numHiddenLayers - m_numShared;
    for (int64_t layer = 0; layer < c.numHiddenLayers; ++layer) {
        if (layer < firstShared) {
            m_kvSource.push_back(layer);
            continue;
        }
        const AttentionKind kind = m_attentionKinds[static_cast<size_t>(layer)];
        if (!hasAttention(layer) || kind == AttentionKind::Hybrid) {
            throw ModelError("shared-KV layer " + std::to_string(layer) + " is " + attentionKindName(kind) +
                             "; only full, sliding and chunked attention layers can share keys/values");
        }
        int64_t source = -1;
        for (int64_t candidate = firstShared - 1; candidate >= 0; --candidate) {
            if (m_attentionKinds[static_cast<size_t>(candidate)] == kind) {
                source = candidate;
                break;
            }
        }
        if (source < 0) {
            throw ModelError("shared-KV layer " + std::to_string(layer) + " (" + attentionKindName(kind) +
                             ") has no earlier non-shared layer of the same type to take keys/values from");
        }
        m_kvSource.push_back(source);
    }

    // Qwen3NextConfig's defaults; elsewhere (kvscope's hybrid layers) the attention's heads and dims.
    const bool next = m_family == ModelFamily::Qwen3Next;
    m_linearKeyHeads = c.linearNumKeyHeads.value_or(next ? 16 : c.numAttentionHeads);
    m_linearValueHeads = c.linearNumValueHeads.value_or(next ? 32 : m_linearKeyHeads);
    m_linearKeyDim = c.linearKeyHeadDim.value_or(next ? 128 : m_headDim);
    m_linearValueDim = c.linearValueHeadDim.value_or(next ? 128 : m_headDim);
    bool anyLinear = false;
    for (int64_t layer = 0; layer < c.numHiddenLayers; ++layer) {
        anyLinear = anyLinear || hasLinearAttention(layer);
    }
    if (anyLinear) {
        requirePositive(c.linearConvKernelDim, "linear_conv_kernel_dim");
        requirePositive(m_linearKeyHeads, "linear_num_key_heads");
        requirePositive(m_linearValueHeads, "linear_num_value_heads");
        requirePositive(m_linearKeyDim, "linear_key_head_dim");
        requirePositive(m_linearValueDim, "linear_value_head_dim");
        if (m_linearValueHeads % m_linearKeyHeads != 0) {
            throw ModelError("linear_num_value_heads (" + std::to_string(m_linearValueHeads) +
                             ") must be a multiple of linear_num_key_heads (" + std::to_string(m_linearKeyHeads) + ")");
        }
    }

    if (m_family == ModelFamily::Qwen3Next) {
        // Qwen3NextConfig's defaults where config.json says nothing.
        m_numExperts = c.numExperts.value_or(512);
        m_expertsPerToken = c.numExpertsPerToken.value_or(10);
        m_expertIntermediateSize = c.moeIntermediateSize.value_or(512);
        m_sharedExpertIntermediateSize = c.sharedExpertIntermediateSize.value_or(512);
        m_normalizesExpertWeights = c.normTopkProb.value_or(true);
        m_decoderSparseStep = c.decoderSparseStep.value_or(1);
        if (m_numExperts < 0) {
            throw ModelError("config field `num_experts` must be >= 0, got " + std::to_string(m_numExperts));
        }
        if (m_numExperts > 0) {
            requirePositive(m_expertsPerToken, "num_experts_per_tok");
            requirePositive(m_expertIntermediateSize, "moe_intermediate_size");
            requirePositive(m_sharedExpertIntermediateSize, "shared_expert_intermediate_size");
            requirePositive(m_decoderSparseStep, "decoder_sparse_step");
            if (m_expertsPerToken > m_numExperts) {
                throw ModelError("config field `num_experts_per_tok` (" + std::to_string(m_expertsPerToken) +
                                 ") must be at most `num_experts` (" + std::to_string(m_numExperts) + ")");
            }
        }
    } else if (c.numExperts.value_or(0) > 0) {
        throw ModelError("config field `num_experts` (mixture-of-experts MLPs) is supported for model_type qwen3_next "
                         "only (got " + std::to_string(*c.numExperts) + " for `" + c.modelType + "`)");
    }

    if (m_family == ModelFamily::Whisper) {
        requirePositive(c.encoderLayers, "encoder_layers");
        requirePositive(c.encoderAttentionHeads, "encoder_attention_heads");
        requirePositive(c.encoderFfnDim, "encoder_ffn_dim");
        requirePositive(c.maxSourcePositions, "max_source_positions");
        requirePositive(c.numMelBins, "num_mel_bins");
        if (c.hiddenSize % c.encoderAttentionHeads != 0) {
            throw ModelError("d_model (" + std::to_string(c.hiddenSize) + ") must be divisible by encoder_attention_heads (" +
                             std::to_string(c.encoderAttentionHeads) + ")");
        }
        if (m_numShared != 0) {
            throw ModelError("whisper models cannot share keys/values across layers (num_kv_shared_layers must be 0)");
        }
    }
}

bool Architecture::hasAttention(int64_t layer) const { return attentionKind(layer) != AttentionKind::LinearAttention; }

bool Architecture::hasLinearAttention(int64_t layer) const {
    const AttentionKind kind = attentionKind(layer);
    return kind == AttentionKind::LinearAttention || kind == AttentionKind::Hybrid;
}

bool Architecture::hasSparseExperts(int64_t layer) const {
    const auto& only = m_config.mlpOnlyLayers;
    return m_numExperts > 0 && std::find(only.begin(), only.end(), layer) == only.end() &&
           (layer + 1) % m_decoderSparseStep == 0;
}

int64_t Architecture::window(int64_t layer) const {
    switch (attentionKind(layer)) {
    case AttentionKind::SlidingAttention:
        return *m_config.slidingWindow;
    case AttentionKind::ChunkedAttention:
        return *m_config.attentionChunkSize;
    default:
        return 0;
    }
}

bool Architecture::isKvSource(int64_t layer) const {
    for (int64_t other = 0; other < numLayers(); ++other) {
        if (other != layer && m_kvSource[static_cast<size_t>(other)] == layer) {
            return true;
        }
    }
    return false;
}

const char* Architecture::attentionKindName(AttentionKind kind) {
    switch (kind) {
    case AttentionKind::FullAttention:
        return "full_attention";
    case AttentionKind::SlidingAttention:
        return "sliding_attention";
    case AttentionKind::ChunkedAttention:
        return "chunked_attention";
    case AttentionKind::LinearAttention:
        return "linear_attention";
    case AttentionKind::Hybrid:
        return "hybrid";
    }
    return "unknown";
}

std::string Architecture::patternSummary() const {
    const auto count = m_attentionKinds.size();
    // The shortest repeating unit, described as runs ("5 sliding_attention + 1 full_attention").
    size_t period = count;
    for (size_t candidate = 1; candidate < count; ++candidate) {
        if (count % candidate != 0) {
            continue;
        }
        bool repeats = true;
        for (size_t i = candidate; i < count && repeats; ++i) {
            repeats = m_attentionKinds[i] == m_attentionKinds[i % candidate];
        }
        if (repeats) {
            period = candidate;
            break;
        }
    }
    std::string unit;
    size_t runs = 0;
    for (size_t start = 0; start < period;) {
        size_t end = start;
        while (end < period && m_attentionKinds[end] == m_attentionKinds[start]) {
            ++end;
        }
        if (!unit.empty()) {
            unit += " + ";
        }
        const size_t length = end - start;
        unit += (length > 1 ? std::to_string(length) + " " : std::string()) + attentionKindName(m_attentionKinds[start]);
        ++runs;
        start = end;
    }
    std::string summary = count / period > 1 ? (runs > 1 ? "(" + unit + ")" : unit) + " x " + std::to_string(count / period)
                                             : unit;
    if (period == 1 && count > 1) {
        summary = std::to_string(count) + " " + attentionKindName(m_attentionKinds[0]);
    }
    if (m_numShared > 0) {
        summary += "; last " + std::to_string(m_numShared) + " share keys/values";
    }
    if (isEncoderDecoder()) {
        summary += "; encoder " + std::to_string(m_config.encoderLayers) + " layers, cross-attention";
    }
    return summary;
}

} // namespace kvscope::model
