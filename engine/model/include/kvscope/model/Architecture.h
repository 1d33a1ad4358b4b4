// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ModelConfig.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::model {

/// What attention one decoder layer computes (from the config's `layer_types`); the cache layer class a
/// trace records is trace::LayerKind.
enum class AttentionKind { FullAttention, SlidingAttention, ChunkedAttention, LinearAttention, Hybrid };

/// Conventions shared by a family of checkpoints: norms, embedding scale, biases, block layout.
enum class ModelFamily { Llama, Qwen2, Qwen3, Qwen3Next, Gemma, Phi3, Whisper };

enum class Activation { Silu, Gelu, GeluTanh };

/// How kvscope's built-in models realise a config: the family's conventions and what every layer is.
/// Torch-free, so that presets can be described without LibTorch; every refusal is a ModelError.
class Architecture {
public:
    explicit Architecture(config::ModelConfig config);

    const config::ModelConfig& config() const { return m_config; }
    ModelFamily family() const { return m_family; }
    Activation activation() const { return m_activation; }
    /// Gemma's and Qwen3-Next's RMSNorm multiplies by (1 + weight).
    bool normAddsOne() const { return m_family == ModelFamily::Gemma || m_family == ModelFamily::Qwen3Next; }
    /// Gemma scales embeddings by sqrt(hidden_size).
    bool scalesEmbeddings() const { return m_family == ModelFamily::Gemma; }
    /// Biases on q/k/v (Qwen2, or `attention_bias`); `attention_bias` adds one on o_proj too.
    bool qkvBias() const { return m_qkvBias; }
    bool outputBias() const { return m_outputBias; }
    bool tiedEmbeddings() const { return m_tiedEmbeddings; }
    /// Gemma 2 and 3: the attention output is normed before the residual add, and the MLP sits between
    /// `pre_feedforward_layernorm` and `post_feedforward_layernorm`.
    bool sandwichNorms() const { return m_sandwichNorms; }
    /// Qwen3, Qwen3-Next and Gemma 3: RMSNorm over each query and key head (`q_norm`, `k_norm`) before rotation.
    bool queryKeyNorms() const { return m_queryKeyNorms; }
    /// Phi-3: one `qkv_proj` and one `gate_up_proj` instead of separate projections.
    bool fusedProjections() const { return m_family == ModelFamily::Phi3; }
    /// Qwen3-Next: q_proj gives each head its query and an output gate side by side ([q | gate] per head);
    /// the attention output is multiplied by sigmoid(gate) before o_proj.
    bool gatedAttention() const { return m_family == ModelFamily::Qwen3Next; }
    /// Channels of each head that rotate (`partial_rotary_factor` of head_dim: Phi-3, Qwen3-Next).
    int64_t rotaryDim() const { return m_rotaryDim; }
    /// Gemma 3's sliding layers rotate with `rope_local_base_freq` and without rope scaling.
    bool usesLocalRotary(int64_t layer) const;
    double localRopeTheta() const { return m_localRopeTheta; }
    /// The RoPE scaling types kvscope applies.
    static const char* allowedRopeScalings();
    double attentionScale() const { return m_attentionScale; }
    bool isEncoderDecoder() const { return m_family == ModelFamily::Whisper; }

    int64_t numLayers() const { return static_cast<int64_t>(m_attentionKinds.size()); }
    AttentionKind attentionKind(int64_t layer) const { return m_attentionKinds.at(static_cast<size_t>(layer)); }
    const std::vector<AttentionKind>& attentionKinds() const { return m_attentionKinds; }
    bool hasAttention(int64_t layer) const;
    bool hasLinearAttention(int64_t layer) const;
    /// Sliding window or chunk size of a sliding/chunked layer; 0 otherwise.
    int64_t window(int64_t layer) const;
    /// The layer whose keys/values a shared-KV layer reuses (Gemma 3n): the last non-shared layer of
    /// the same kind. A layer that computes its own keys/values returns itself.
    int64_t kvSourceLayer(int64_t layer) const { return m_kvSource.at(static_cast<size_t>(layer)); }
    bool isKvShared(int64_t layer) const { return kvSourceLayer(layer) != layer; }
    /// Whether a later shared layer reuses this layer's keys/values.
    bool isKvSource(int64_t layer) const;
    int64_t numKvSharedLayers() const { return m_numShared; }

    int64_t hiddenSize() const { return m_config.hiddenSize; }
    int64_t headDim() const { return m_headDim; }
    int64_t numHeads() const { return m_config.numAttentionHeads; }
    int64_t numKvHeads() const { return m_config.numKeyValueHeads; }
    int64_t intermediateSize() const { return m_config.intermediateSize; }
    int64_t vocabSize() const { return m_config.vocabSize; }

    /// Whether a layer's MLP is a sparse mixture of experts (Qwen3-Next: `num_experts` > 0, the layer not in
    /// `mlp_only_layers`, every `decoder_sparse_step`-th layer): a softmax router picks expertsPerToken() of
    /// numExperts() experts, beside a shared expert gated by sigmoid(shared_expert_gate).
    bool hasSparseExperts(int64_t layer) const;
    int64_t numExperts() const { return m_numExperts; }
    int64_t expertsPerToken() const { return m_expertsPerToken; }
    int64_t expertIntermediateSize() const { return m_expertIntermediateSize; }
    int64_t sharedExpertIntermediateSize() const { return m_sharedExpertIntermediateSize; }
    /// `norm_topk_prob`: the chosen experts' weights are renormalised to sum to 1.
    bool normalizesExpertWeights() const { return m_normalizesExpertWeights; }

    int64_t convKernel() const { return m_config.linearConvKernelDim; }
    int64_t linearKeyHeads() const { return m_linearKeyHeads; }
    int64_t linearValueHeads() const { return m_linearValueHeads; }
    int64_t linearKeyDim() const { return m_linearKeyDim; }
    int64_t linearValueDim() const { return m_linearValueDim; }
    /// Channels of the linear-attention convolution (q, k and v side by side).
    int64_t convChannels() const { return 2 * m_linearKeyHeads * m_linearKeyDim + m_linearValueHeads * m_linearValueDim; }

    /// The config's layer type name of a kind ("sliding_attention", ...).
    static const char* attentionKindName(AttentionKind kind);
    /// The layer pattern in a few words, e.g. "5 sliding_attention + 1 full_attention" or
    /// "(sliding_attention + full_attention) x 2", with shared-KV layers noted.
    std::string patternSummary() const;
    /// The allowed `model_type` values.
    static const char* allowedModelTypes();

private:
    config::ModelConfig m_config;
    ModelFamily m_family = ModelFamily::Llama;
    Activation m_activation = Activation::Silu;
    bool m_qkvBias = false;
    bool m_outputBias = false;
    bool m_tiedEmbeddings = false;
    bool m_sandwichNorms = false;
    bool m_queryKeyNorms = false;
    int64_t m_rotaryDim = 0;
    double m_localRopeTheta = 0.0;
    double m_attentionScale = 1.0;
    int64_t m_headDim = 0;
    std::vector<AttentionKind> m_attentionKinds;
    std::vector<int64_t> m_kvSource;
    int64_t m_numShared = 0;
    int64_t m_linearKeyHeads = 0;
    int64_t m_linearValueHeads = 0;
    int64_t m_linearKeyDim = 0;
    int64_t m_linearValueDim = 0;
    int64_t m_numExperts = 0;
    int64_t m_expertsPerToken = 0;
    int64_t m_expertIntermediateSize = 0;
    int64_t m_sharedExpertIntermediateSize = 0;
    bool m_normalizesExpertWeights = false;
    int64_t m_decoderSparseStep = 1;
};

} // namespace kvscope::model
