// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/LanguageModel.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace kvscope::model {

/// A decoder-only transformer (Llama, Mistral, Qwen2/3, Qwen3-Next, Gemma 1-3 and Phi-3 conventions): embeddings,
/// RMSNorm, rotary positions, grouped-query attention over a cache (full, sliding or chunked masks built from
/// the cache's mask sizes), a gated MLP; linear-attention layers (short causal convolution plus a
/// gated delta-rule recurrence, state in the cache), hybrid layers (both, summed) and shared-KV
/// layers (Gemma 3n: the last layers reuse an earlier layer's keys/values).
class Decoder : public LanguageModel {
public:
    /// Checks that `parameters` hold every tensor of parameterSpecs(architecture) with its shape.
    Decoder(Architecture architecture, ParameterStore parameters);
    ~Decoder() override;

    at::Tensor forward(const at::Tensor& inputIds, ModelCache* cache,
                       const at::Tensor& attentionMask = at::Tensor()) override;
    at::Tensor forwardLast(const at::Tensor& inputIds, ModelCache* cache,
                           const at::Tensor& attentionMask = at::Tensor()) override;

    /// Every parameter, with Hugging Face names (model.layers.N.self_attn.q_proj.weight, ...).
    static std::vector<ParameterSpec> parameterSpecs(const Architecture& architecture);

private:
    struct Pass;

    /// forward(), with the final norm and the head on the last position only when `lastOnly`.
    at::Tensor run(const at::Tensor& inputIds, ModelCache* cache, const at::Tensor& attentionMask, bool lastOnly);

    at::Tensor attention(int64_t layer, const at::Tensor& hidden, Pass& pass) const;
    /// Query, keys and values of a layer [batch, heads, tokens, headDim], q/k-normed where the family
    /// norms them, not yet rotated; keys and values undefined for a layer that reuses another's. A gated
    /// attention's output gate [batch, tokens, heads * headDim] goes to `gate`.
    std::tuple<at::Tensor, at::Tensor, at::Tensor> project(int64_t layer, const at::Tensor& hidden, bool ownStates,
                                                           at::Tensor* gate) const;
    /// The query's rows of a q_proj weight or bias (all of them, but for a gated attention's [query | gate]).
    at::Tensor queryRows(const at::Tensor& projection) const;
    /// Qwen3-Next's sparse mixture of experts: the router's top experts, weighted, plus the gated shared expert.
    at::Tensor sparseExperts(int64_t layer, const at::Tensor& hidden) const;
    /// down_proj(act(gate_proj(x)) * up_proj(x)) of the weights under `prefix` (one expert, or the shared one).
    at::Tensor gatedProduct(const std::string& prefix, const at::Tensor& hidden) const;
    at::Tensor linearAttention(int64_t layer, const at::Tensor& hidden, Pass& pass) const;
    at::Tensor mlp(int64_t layer, const at::Tensor& hidden) const;
    /// The named parameter (a packed matrix widened: for presses and observers, not the products).
    at::Tensor weight(const std::string& name) const { return m_parameters.get(name); }
    at::Tensor linear(const at::Tensor& input, const std::string& weightName, const at::Tensor& bias = at::Tensor()) const {
        return m_parameters.linear(input, weightName, bias);
    }
    /// The named tensor, or an undefined one when the parameter does not exist (optional biases).
    at::Tensor optional(const std::string& name) const;
    /// A projection weight an observer (a press) reads: a packed matrix is widened once and kept, not at every
    /// pass (SmolLM2's q, k and o projections: 93 MB of float32 while a press is attached).
    at::Tensor observedWeight(const std::string& name) const;

    /// Rotary inverse frequencies of rope_theta (and of Gemma 3's local theta, else undefined).
    at::Tensor m_inverseFrequencies;
    at::Tensor m_localInverseFrequencies;
    mutable std::map<std::string, at::Tensor> m_observedWeights;
};

} // namespace kvscope::model
