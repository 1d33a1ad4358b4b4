// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/Decoder.h"

#include "kvscope/model/TensorOps.h"
#include "kvscope/model/AttentionObserver.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/model/MaskBuilder.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"
#include "PromptBufferPool.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace kvscope::model {
namespace {

std::string layerPrefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }

/// Tokens a dense MLP takes at once: a long prompt's intermediate activations ([tokens, intermediate], three of
/// them at once) stay those of 512 tokens (18 MB for SmolLM2) instead of growing with the prompt (a 128k-token
/// prompt's would be gigabytes). Its rows are independent: the result is the same.
constexpr int64_t kMlpTokens = 512;

/// Keys, values and mask a layer attended with, kept for the shared-KV layers that reuse them.
struct AttendedStates {
    at::Tensor keys;
    at::Tensor values;
    at::Tensor mask;
    /// Slots a masking press hid per KV head (ModelCache::maskedSlots), or undefined.
    at::Tensor hiddenSlots;
};

} // namespace

/// The state of one forward pass.
struct Decoder::Pass {
    cache::Cache* cache = nullptr;
    int64_t batch = 0;
    int64_t length = 0;
    int64_t queryOffset = 0;
    /// A press removed tokens: full-attention masks then start at each layer's own cached count.
    bool pressed = false;
    /// A press masked slots per head (ModelCache::maskedSlots): attention then hides them per KV head.
    bool masked = false;
    ModelCache* modelCache = nullptr;
    at::Tensor paddingMask;
    at::Tensor positions;
    at::Tensor inverseFrequencies;
    at::Tensor cos;
    at::Tensor sin;
    /// Gemma 3's sliding layers: the rotary table of `rope_local_base_freq`.
    at::Tensor localInverseFrequencies;
    at::Tensor localCos;
    at::Tensor localSin;
    /// Masks built in this pass, by (kind, kvLength, kvOffset): layers of one kind share them.
    std::map<std::tuple<int, int64_t, int64_t>, at::Tensor> masks;
    std::map<int64_t, AttendedStates> shared;
};

Decoder::Decoder(Architecture architecture, ParameterStore parameters)
    : LanguageModel(std::move(architecture), std::move(parameters)) {
    if (m_architecture.isEncoderDecoder()) {
        throw ModelError("model_type `" + config().modelType + "` is an encoder-decoder; use EncoderDecoderModel");
    }
    m_parameters.check(parameterSpecs(m_architecture));
    // Fixed by the config: computed once here, not in every forward pass (a decode step's fixed cost).
    m_inverseFrequencies = ops::inverseFrequencies(m_architecture.rotaryDim(), config().ropeTheta,
                                                   config().ropeScaling, m_device);
    if (m_architecture.localRopeTheta() > 0.0) {
        m_localInverseFrequencies = ops::inverseFrequencies(m_architecture.rotaryDim(),
                                                            m_architecture.localRopeTheta(), std::nullopt, m_device);
    }
}

Decoder::~Decoder() = default;

std::vector<ParameterSpec> Decoder::parameterSpecs(const Architecture& arch) {
    const int64_t hidden = arch.hiddenSize();
    const int64_t queryWidth = arch.numHeads() * arch.headDim();
    const int64_t kvWidth = arch.numKvHeads() * arch.headDim();
    // Norm weights sit near their identity (1, or 0 for Gemma's 1 + w) with some spread, so that a
    // loader that drops or mis-reads them changes the logits.
    const double normMean = arch.normAddsOne() ? 0.0 : 1.0;
    auto norm = [&](const std::string& name, int64_t size) { return ParameterSpec{name, {size}, normMean, 0.1}; };
    auto bias = [](const std::string& name, int64_t size) { return ParameterSpec{name, {size}, 0.0, 0.1}; };

    std::vector<ParameterSpec> specs;
    specs.push_back({"model.embed_tokens.weight", {arch.vocabSize(), hidden}});
    for (int64_t layer = 0; layer < arch.numLayers(); ++layer) {
        const std::string p = layerPrefix(layer);
        specs.push_back(norm(p + "input_layernorm.weight", hidden));
        if (arch.hasAttention(layer) && arch.fusedProjections()) {
            specs.push_back({p + "self_attn.qkv_proj.weight", {queryWidth + 2 * kvWidth, hidden}});
            specs.push_back({p + "self_attn.o_proj.weight", {hidden, queryWidth}});
        } else if (arch.hasAttention(layer)) {
            // Qwen3-Next's q_proj also yields the output gate: [query | gate] per head.
            const int64_t queryRows = arch.gatedAttention() ? 2 * queryWidth : queryWidth;
            specs.push_back({p + "self_attn.q_proj.weight", {queryRows, hidden}});
            if (arch.qkvBias()) {
                specs.push_back(bias(p + "self_attn.q_proj.bias", queryRows));
            }
            if (!arch.isKvShared(layer)) {
                for (const char* name : {"k_proj", "v_proj"}) {
                    specs.push_back({p + "self_attn." + name + ".weight", {kvWidth, hidden}});
                    if (arch.qkvBias()) {
                        specs.push_back(bias(p + "self_attn." + name + ".bias", kvWidth));
                    }
                }
            }
            specs.push_back({p + "self_attn.o_proj.weight", {hidden, queryWidth}});
            if (arch.outputBias()) {
                specs.push_back(bias(p + "self_attn.o_proj.bias", hidden));
            }
        }
        if (arch.hasAttention(layer) && arch.queryKeyNorms()) {
            specs.push_back(norm(p + "self_attn.q_norm.weight", arch.headDim()));
            if (!arch.isKvShared(layer)) {
                specs.push_back(norm(p + "self_attn.k_norm.weight", arch.headDim()));
            }
        }
        if (arch.hasLinearAttention(layer)) {
            const int64_t keyWidth = arch.linearKeyHeads() * arch.linearKeyDim();
            const int64_t valueWidth = arch.linearValueHeads() * arch.linearValueDim();
            specs.push_back({p + "linear_attn.in_proj_qkvz.weight", {2 * keyWidth + 2 * valueWidth, hidden}});
            specs.push_back({p + "linear_attn.in_proj_ba.weight", {2 * arch.linearValueHeads(), hidden}});
            specs.push_back({p + "linear_attn.conv1d.weight", {arch.convChannels(), 1, arch.convKernel()}});
            specs.push_back({p + "linear_attn.dt_bias", {arch.linearValueHeads()}, 0.0, 0.5});
            specs.push_back({p + "linear_attn.A_log", {arch.linearValueHeads()}, 0.0, 0.5});
            specs.push_back({p + "linear_attn.norm.weight", {arch.linearValueDim()}, 1.0, 0.1});
            specs.push_back({p + "linear_attn.out_proj.weight", {hidden, valueWidth}});
        }
        specs.push_back(norm(p + "post_attention_layernorm.weight", hidden));
        if (arch.sandwichNorms()) {
            specs.push_back(norm(p + "pre_feedforward_layernorm.weight", hidden));
            specs.push_back(norm(p + "post_feedforward_layernorm.weight", hidden));
        }
        if (arch.hasSparseExperts(layer)) {
            const int64_t experts = arch.numExperts();
            const int64_t expertWidth = arch.expertIntermediateSize();
            const int64_t sharedWidth = arch.sharedExpertIntermediateSize();
            // The checkpoint's layout (Transformers fuses the experts at load and splits them again on save).
            specs.push_back({p + "mlp.gate.weight", {experts, hidden}});
            for (int64_t expert = 0; expert < experts; ++expert) {
                const std::string e = p + "mlp.experts." + std::to_string(expert) + ".";
                specs.push_back({e + "gate_proj.weight", {expertWidth, hidden}});
                specs.push_back({e + "up_proj.weight", {expertWidth, hidden}});
                specs.push_back({e + "down_proj.weight", {hidden, expertWidth}});
            }
            specs.push_back({p + "mlp.shared_expert.gate_proj.weight", {sharedWidth, hidden}});
            specs.push_back({p + "mlp.shared_expert.up_proj.weight", {sharedWidth, hidden}});
            specs.push_back({p + "mlp.shared_expert.down_proj.weight", {hidden, sharedWidth}});
            specs.push_back({p + "mlp.shared_expert_gate.weight", {1, hidden}});
            continue;
        }
        if (arch.fusedProjections()) {
            specs.push_back({p + "mlp.gate_up_proj.weight", {2 * arch.intermediateSize(), hidden}});
        } else {
            specs.push_back({p + "mlp.gate_proj.weight", {arch.intermediateSize(), hidden}});
            specs.push_back({p + "mlp.up_proj.weight", {arch.intermediateSize(), hidden}});
        }
        specs.push_back({p + "mlp.down_proj.weight", {hidden, arch.intermediateSize()}});
    }
    specs.push_back(norm("model.norm.weight", hidden));
    if (!arch.tiedEmbeddings()) {
        specs.push_back({"lm_head.weight", {arch.vocabSize(), hidden}});
    }
    return specs;
}

at::Tensor Decoder::optional(const std::string& name) const {
    return m_parameters.contains(name) ? m_parameters.get(name) : at::Tensor();
}

at::Tensor Decoder::forward(const at::Tensor& inputIds, ModelCache* modelCache, const at::Tensor& attentionMask) {
    return run(inputIds, modelCache, attentionMask, /*lastOnly=*/false);
}

at::Tensor Decoder::forwardLast(const at::Tensor& inputIds, ModelCache* modelCache, const at::Tensor& attentionMask) {
    return run(inputIds, modelCache, attentionMask, /*lastOnly=*/true);
}

at::Tensor Decoder::run(const at::Tensor& inputIds, ModelCache* modelCache, const at::Tensor& attentionMask,
                        bool lastOnly) {
    // Inference builds no graph; a trainer's forward (parameters that require gradients) does.
    at::AutoGradMode gradMode(m_trainable && at::GradMode::is_enabled());
    const Architecture& arch = m_architecture;
    if (modelCache != nullptr && modelCache->encoderDecoder() != nullptr) {
        throw ModelError("a decoder-only model takes a decoder cache, not an encoder-decoder cache");
    }
    const at::Tensor ids = checkedInputIds(inputIds);
    // A prompt's layers ask for the same large buffers one after another: the pool hands them on and returns
    // them to the system after, where glibc's heap kept them (the process's peak). A training step's buffers
    // live on for its backward pass, so it keeps glibc's.
    std::optional<PromptBufferPool::Prompt> prompt;
    if (ids.size(1) > 1 && !at::GradMode::is_enabled()) {
        prompt.emplace();
    }
    Pass pass;
    pass.cache = modelCache != nullptr ? &modelCache->selfAttention() : nullptr;
    pass.batch = ids.size(0);
    pass.length = ids.size(1);
    // masking_utils' q_offset: the tokens seen before this forward (layer 0's count, plus any tokens a
    // press removed from it: kept tokens keep their positions, new ones continue from the original length).
    pass.modelCache = modelCache;
    pass.pressed = modelCache != nullptr && modelCache->pressed();
    pass.masked = modelCache != nullptr && modelCache->masked();
    pass.queryOffset = pass.cache != nullptr ? pass.cache->seqLength(0) + modelCache->evictedTokens(0) : 0;
    pass.paddingMask = checkedAttentionMask(attentionMask, pass.batch, pass.queryOffset + pass.length);

    at::Tensor positions;
    if (pass.paddingMask.defined()) {
        // generate()'s position ids under left padding: cumsum(mask) - 1, padding at 1.
        at::Tensor counted = pass.paddingMask.to(at::kLong).cumsum(-1) - 1;
        positions = counted.masked_fill(pass.paddingMask.logical_not(), 1).narrow(1, pass.queryOffset, pass.length);
    } else {
        positions = (at::arange(pass.length, ids.options()) + pass.queryOffset).unsqueeze(0);
    }
    pass.positions = positions;
    pass.inverseFrequencies = m_inverseFrequencies;
    std::tie(pass.cos, pass.sin) = ops::rotary(positions, pass.inverseFrequencies);
    if (arch.localRopeTheta() > 0.0) {
        pass.localInverseFrequencies = m_localInverseFrequencies;
        std::tie(pass.localCos, pass.localSin) = ops::rotary(positions, pass.localInverseFrequencies);
    }

    at::Tensor x = m_parameters.embed("model.embed_tokens.weight", ids);
    if (arch.scalesEmbeddings()) {
        x = x * std::sqrt(static_cast<double>(arch.hiddenSize()));
    }
    const double eps = config().rmsNormEps;
    for (int64_t layer = 0; layer < arch.numLayers(); ++layer) {
        const std::string p = layerPrefix(layer);
        at::Tensor normed = ops::rmsNorm(x, weight(p + "input_layernorm.weight"), eps, arch.normAddsOne());
        at::Tensor mixed;
        if (arch.hasAttention(layer)) {
            mixed = attention(layer, normed, pass);
        }
        if (arch.hasLinearAttention(layer)) {
            at::Tensor linear = linearAttention(layer, normed, pass);
            mixed = mixed.defined() ? mixed + linear : linear;
        }
        if (arch.sandwichNorms()) {
            // Gemma 2/3: post_attention_layernorm norms the attention output, the MLP has its own pair.
            x = x +
                ops::rmsNorm(mixed, weight(p + "post_attention_layernorm.weight"), eps, arch.normAddsOne());
            normed = ops::rmsNorm(x, weight(p + "pre_feedforward_layernorm.weight"), eps, arch.normAddsOne());
            x = x + ops::rmsNorm(mlp(layer, normed), weight(p + "post_feedforward_layernorm.weight"), eps,
                                 arch.normAddsOne());
            continue;
        }
        x = x + mixed;
        normed = ops::rmsNorm(x, weight(p + "post_attention_layernorm.weight"), eps, arch.normAddsOne());
        x = x + mlp(layer, normed);
    }
    if (lastOnly) {
        x = x.narrow(1, x.size(1) - 1, 1);
    }
    x = ops::rmsNorm(x, weight("model.norm.weight"), eps, arch.normAddsOne());
    at::Tensor logits = linear(x, arch.tiedEmbeddings() ? "model.embed_tokens.weight" : "lm_head.weight");
    if (config().finalLogitSoftcapping && *config().finalLogitSoftcapping > 0) {
        const double cap = *config().finalLogitSoftcapping;
        logits = at::tanh(logits / cap) * cap;
    }
    return logits;
}

at::Tensor Decoder::attention(int64_t layer, const at::Tensor& hidden, Pass& pass) const {
    const Architecture& arch = m_architecture;
    const std::string p = layerPrefix(layer) + "self_attn.";
    const bool local = arch.usesLocalRotary(layer);
    const at::Tensor& cos = local ? pass.localCos : pass.cos;
    const at::Tensor& sin = local ? pass.localSin : pass.sin;
    const bool ownStates = arch.kvSourceLayer(layer) == layer;
    at::Tensor gate;
    auto [query, keys, values] = project(layer, hidden, ownStates, &gate);
    query = ops::applyRotary(query, cos, sin);

    AttendedStates states;
    const int64_t source = arch.kvSourceLayer(layer);
    if (!ownStates) {
        auto it = pass.shared.find(source);
        if (it == pass.shared.end()) {
            throw ModelError("shared-KV layer " + std::to_string(layer) + " found no keys/values from layer " +
                             std::to_string(source));
        }
        states = it->second;
    } else {
        keys = ops::applyRotary(keys, cos, sin);
        cache::MaskSizes sizes{pass.length, 0};
        if (pass.cache != nullptr) {
            // Mask sizes first: they describe the states the update is about to return.
            sizes = pass.cache->maskSizes(pass.length, layer);
            cache::KeyValueStates updated = pass.cache->update(keys, values, layer);
            keys = updated.keys;
            values = updated.values;
        }
        if (keys.size(2) != sizes.kvLength) {
            throw ModelError("cache layer " + std::to_string(layer) + " returned " + std::to_string(keys.size(2)) +
                             " key rows but its mask sizes promised " + std::to_string(sizes.kvLength));
        }
        const AttentionKind kind = arch.attentionKind(layer) == AttentionKind::Hybrid ? AttentionKind::FullAttention : arch.attentionKind(layer);
        // A pressed full-attention layer holds fewer slots than positions: its new tokens follow its own slots.
        const int64_t queryOffset = pass.pressed && kind == AttentionKind::FullAttention ? sizes.kvLength - pass.length
                                                                                           : pass.queryOffset;
        const auto key = std::make_tuple(static_cast<int>(kind), sizes.kvLength, sizes.kvOffset);
        auto found = pass.masks.find(key);
        // A decode step's one query at or past every slot of a full-attention layer sees them all: no mask
        // to build or apply (an undefined mask), the same scores at a few operations less per layer.
        const bool seesEverySlot = kind == AttentionKind::FullAttention && pass.length == 1 &&
                                   !pass.paddingMask.defined() &&
                                   queryOffset >= sizes.kvOffset + sizes.kvLength - 1;
        if (found == pass.masks.end() && seesEverySlot) {
            found = pass.masks.emplace(key, at::Tensor()).first;
        } else if (found == pass.masks.end()) {
            found = pass.masks
                        .emplace(key, MaskBuilder::build(kind, arch.window(layer), pass.length, queryOffset, sizes,
                                                         pass.paddingMask, m_device))
                        .first;
        }
        states = {keys, values, found->second};
        if (pass.masked) {
            states.hiddenSlots = pass.modelCache->maskedSlots(layer);
        }
        if (arch.isKvSource(layer)) {
            pass.shared[layer] = states;
        }
    }
    const double softcap = config().attnLogitSoftcapping.value_or(0.0);
    const bool observed = m_observer != nullptr && source == layer;
    // The attention each key received from this pass's queries, summed chunk by chunk of query rows.
    at::Tensor received;
    ops::AttentionWeightsSink receive;
    if (observed && m_observer->wantsAttentionWeights(layer, pass.length)) {
        receive = [&received, observer = m_observer, layer](const at::Tensor& weights, int64_t firstQuery) {
            observer->attentionWeights(layer, weights, firstQuery);
            const at::Tensor sums = weights.sum(2);
            received = received.defined() ? received + sums : sums;
        };
    }
    at::Tensor attended = ops::attend(query, states.keys, states.values, states.mask, arch.attentionScale(),
                                      softcap, nullptr, states.hiddenSlots, receive, m_attentionQueryChunk);
    if (gate.defined()) {
        attended = attended * at::sigmoid(gate);
    }
    if (observed) {
        AttentionPass seen;
        seen.layer = layer;
        seen.queryLength = pass.length;
        seen.hiddenStates = hidden;
        if (arch.fusedProjections()) {
            // Phi-3: the query's rows of qkv_proj.
            const int64_t queryWidth = arch.numHeads() * arch.headDim();
            seen.queryWeight = observedWeight(p + "qkv_proj.weight").narrow(0, 0, queryWidth);
            seen.keyWeight =
                observedWeight(p + "qkv_proj.weight").narrow(0, queryWidth, arch.numKvHeads() * arch.headDim());
        } else {
            seen.queryWeight = queryRows(observedWeight(p + "q_proj.weight"));
            seen.queryBias = queryRows(optional(p + "q_proj.bias"));
            // A layer that reuses another's keys has no k_proj of its own (kvpress reads none either).
            seen.keyWeight =
                m_parameters.contains(p + "k_proj.weight") ? observedWeight(p + "k_proj.weight") : at::Tensor();
            seen.keyBias = optional(p + "k_proj.bias");
        }
        if (arch.queryKeyNorms()) {
            seen.queryNormWeight = weight(p + "q_norm.weight");
            seen.keyNormWeight = optional(p + "k_norm.weight");
        }
        seen.outputWeight = observedWeight(p + "o_proj.weight");
        seen.positions = pass.positions;
        seen.keys = states.keys;
        seen.values = states.values;
        seen.cos = cos.squeeze(1);
        seen.sin = sin.squeeze(1);
        seen.inverseFrequencies = local ? pass.localInverseFrequencies : pass.inverseFrequencies;
        seen.attentionReceived = received;
        seen.cache = pass.modelCache;
        m_observer->afterAttention(seen);
    }
    return linear(attended, p + "o_proj.weight", optional(p + "o_proj.bias"));
}

at::Tensor Decoder::observedWeight(const std::string& name) const {
    if (m_parameters.packed(name) == nullptr) {
        return weight(name);
    }
    at::Tensor& widened = m_observedWeights[name];
    if (!widened.defined()) {
        widened = weight(name);
    }
    return widened;
}

at::Tensor Decoder::queryRows(const at::Tensor& projection) const {
    if (!projection.defined() || !m_architecture.gatedAttention()) {
        return projection;
    }
    const int64_t heads = m_architecture.numHeads();
    const int64_t headDim = m_architecture.headDim();
    const at::Tensor perHead = projection.reshape({heads, 2 * headDim, -1}).narrow(1, 0, headDim);
    return projection.dim() == 1 ? perHead.reshape({heads * headDim}) : perHead.reshape({heads * headDim, -1});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Decoder::project(int64_t layer, const at::Tensor& hidden,
                                                                bool ownStates, at::Tensor* gate) const {
    const Architecture& arch = m_architecture;
    const std::string p = layerPrefix(layer) + "self_attn.";
    at::Tensor query;
    at::Tensor keys;
    at::Tensor values;
    if (arch.fusedProjections()) {
        // Phi-3's qkv_proj: query, key and value rows stacked in that order.
        const int64_t queryWidth = arch.numHeads() * arch.headDim();
        const int64_t kvWidth = arch.numKvHeads() * arch.headDim();
        at::Tensor fused = linear(hidden, p + "qkv_proj.weight");
        query = fused.narrow(-1, 0, queryWidth);
        keys = fused.narrow(-1, queryWidth, kvWidth);
        values = fused.narrow(-1, queryWidth + kvWidth, kvWidth);
    } else {
        // The projections of one input: one stacked product where the weights are packed (GgufCheckpoint).
        std::vector<std::string> names{p + "q_proj.weight"};
        std::vector<at::Tensor> biases{optional(p + "q_proj.bias")};
        if (ownStates) {
            for (const char* name : {"k_proj", "v_proj"}) {
                names.push_back(p + name + ".weight");
                biases.push_back(optional(p + name + ".bias"));
            }
        }
        std::vector<at::Tensor> products = m_parameters.linearStacked(hidden, names, biases);
        query = products[0];
        if (arch.gatedAttention()) {
            // Qwen3-Next: [query | gate] per head; the gate stays flat, as the attention output it scales.
            const at::Tensor perHead = query.reshape({query.size(0), query.size(1), arch.numHeads(), 2 * arch.headDim()});
            if (gate != nullptr) {
                *gate = perHead.narrow(-1, arch.headDim(), arch.headDim()).reshape({query.size(0), query.size(1), -1});
            }
            query = perHead.narrow(-1, 0, arch.headDim()).reshape({query.size(0), query.size(1), -1});
        }
        if (ownStates) {
            keys = products[1];
            values = products[2];
        }
    }
    query = ops::splitHeads(query, arch.numHeads());
    const double eps = config().rmsNormEps;
    if (arch.queryKeyNorms()) {
        query = ops::rmsNorm(query, weight(p + "q_norm.weight"), eps, arch.normAddsOne());
    }
    if (!ownStates) {
        return {query, at::Tensor(), at::Tensor()};
    }
    keys = ops::splitHeads(keys, arch.numKvHeads());
    values = ops::splitHeads(values, arch.numKvHeads());
    if (arch.queryKeyNorms()) {
        keys = ops::rmsNorm(keys, weight(p + "k_norm.weight"), eps, arch.normAddsOne());
    }
    return {query, keys, values};
}

at::Tensor Decoder::linearAttention(int64_t layer, const at::Tensor& hidden, Pass& pass) const {
    const Architecture& arch = m_architecture;
    const std::string p = layerPrefix(layer) + "linear_attn.";
    const int64_t batch = pass.batch;
    const int64_t length = pass.length;
    const int64_t keyHeads = arch.linearKeyHeads();
    const int64_t valueHeads = arch.linearValueHeads();
    const int64_t keyDim = arch.linearKeyDim();
    const int64_t valueDim = arch.linearValueDim();
    const int64_t keyWidth = keyHeads * keyDim;
    const int64_t valueWidth = valueHeads * valueDim;
    const int64_t kernel = arch.convKernel();
    const int64_t channels = arch.convChannels();

    // Qwen3-Next's projections are grouped by key head (fix_query_key_value_ordering): per key head
    // [q | k | v of its value heads | z of its value heads], and [b | a] of its value heads.
    const int64_t ratio = valueHeads / keyHeads;
    const at::Tensor projected = linear(hidden, p + "in_proj_qkvz.weight")
                                     .reshape({batch, length, keyHeads, 2 * keyDim + 2 * ratio * valueDim});
    auto part = [&](int64_t start, int64_t width) {
        return projected.narrow(-1, start, width).reshape({batch, length, -1});
    };
    at::Tensor mixedInputs = at::cat({part(0, keyDim), part(keyDim, keyDim), part(2 * keyDim, ratio * valueDim)}, -1)
                                 .transpose(1, 2);                                // [B, C, T]: q, k, v
    at::Tensor gate = part(2 * keyDim + ratio * valueDim, ratio * valueDim);      // z
    const at::Tensor ba = linear(hidden, p + "in_proj_ba.weight").reshape({batch, length, keyHeads, 2 * ratio});
    at::Tensor beta = at::sigmoid(ba.narrow(-1, 0, ratio).reshape({batch, length, valueHeads})); // write strength
    at::Tensor decayLog = -at::exp(weight(p + "A_log")) *
                          at::softplus(ba.narrow(-1, ratio, ratio).reshape({batch, length, valueHeads}) + weight(p + "dt_bias"));

    cache::LinearAttentionLayer* stored = nullptr;
    bool previous = false;
    if (pass.cache != nullptr) {
        if (static_cast<size_t>(layer) >= pass.cache->size()) {
            throw ModelError("layer " + std::to_string(layer) + " is " + Architecture::attentionKindName(arch.attentionKind(layer)) +
                             " but the cache has only " + std::to_string(pass.cache->size()) +
                             " layers (build it from the model config so that it holds linear-attention layers)");
        }
        stored = pass.cache->layer(static_cast<size_t>(layer)).asLinearAttention();
        if (stored == nullptr) {
            throw ModelError("layer " + std::to_string(layer) + " is " + Architecture::attentionKindName(arch.attentionKind(layer)) +
                             " but its cache layer is a " + pass.cache->layer(static_cast<size_t>(layer)).typeName() +
                             ", which holds no linear-attention state (use a dynamic or offloaded cache)");
        }
        previous = pass.cache->hasPreviousState(layer);
    }

    // Causal depthwise convolution over the last `kernel` inputs; the cache holds that window.
    at::Tensor window = previous ? stored->convStates() : at::zeros({batch, channels, kernel}, mixedInputs.options());
    at::Tensor extended = at::cat({window, mixedInputs}, 2);                      // [B, C, K + T]
    const std::vector<int64_t> unit{1};
    const std::vector<int64_t> none{0};
    at::Tensor convolved = at::conv1d(extended.narrow(2, 1, kernel - 1 + length), weight(p + "conv1d.weight"),
                                      at::Tensor(), unit, none, unit, channels);
    convolved = at::silu(convolved).transpose(1, 2);                              // [B, T, C]
    if (pass.cache != nullptr) {
        // First call: the whole zero-padded window; afterwards the new columns, which the layer rolls in.
        pass.cache->updateConvState(previous ? mixedInputs : extended.narrow(2, length, kernel), layer);
    }

    at::Tensor query = convolved.narrow(-1, 0, keyWidth).reshape({batch, length, keyHeads, keyDim});
    at::Tensor key = convolved.narrow(-1, keyWidth, keyWidth).reshape({batch, length, keyHeads, keyDim});
    at::Tensor value = convolved.narrow(-1, 2 * keyWidth, valueWidth).reshape({batch, length, valueHeads, valueDim});
    if (valueHeads > keyHeads) {
        query = query.repeat_interleave(valueHeads / keyHeads, 2);
        key = key.repeat_interleave(valueHeads / keyHeads, 2);
    }
    // Gated delta rule (Qwen3-Next's recurrent form): l2-normalised q and k, q scaled by 1/sqrt(dk).
    query = query / at::sqrt(query.pow(2).sum(-1, true) + 1e-6) / std::sqrt(static_cast<double>(keyDim));
    key = key / at::sqrt(key.pow(2).sum(-1, true) + 1e-6);

    at::Tensor state = previous && stored->isRecurrentStatesInitialized()
                           ? stored->recurrentStates().clone()
                           : at::zeros({batch, valueHeads, keyDim, valueDim}, hidden.options());
    at::Tensor decay = at::exp(decayLog);
    std::vector<at::Tensor> outputs;
    outputs.reserve(static_cast<size_t>(length));
    for (int64_t t = 0; t < length; ++t) {
        at::Tensor q = query.select(1, t);                                        // [B, H, dk]
        at::Tensor k = key.select(1, t);
        at::Tensor v = value.select(1, t);                                        // [B, H, dv]
        state = state * decay.select(1, t).view({batch, valueHeads, 1, 1});
        at::Tensor remembered = (state * k.unsqueeze(-1)).sum(-2);                // [B, H, dv]
        at::Tensor delta = (v - remembered) * beta.select(1, t).unsqueeze(-1);
        state = state + k.unsqueeze(-1) * delta.unsqueeze(-2);
        outputs.push_back((state * q.unsqueeze(-1)).sum(-2));
    }
    if (pass.cache != nullptr) {
        pass.cache->updateRecurrentState(state, layer);
    }
    at::Tensor output = at::stack(outputs, 1);                                    // [B, T, H, dv]
    // Gated RMSNorm: norm(o) * w * silu(z).
    output = ops::rmsNorm(output, weight(p + "norm.weight"), config().rmsNormEps, false) *
             at::silu(gate.reshape({batch, length, valueHeads, valueDim}));
    return linear(output.reshape({batch, length, valueWidth}), p + "out_proj.weight");
}

at::Tensor Decoder::sparseExperts(int64_t layer, const at::Tensor& hidden) const {
    const Architecture& arch = m_architecture;
    const std::string p = layerPrefix(layer) + "mlp.";
    const at::Tensor flat = hidden.reshape({-1, hidden.size(-1)});
    // Qwen3NextTopKRouter: softmax over every expert in float32, the top k, renormalised (norm_topk_prob).
    const at::Tensor probabilities = at::softmax(linear(flat, p + "gate.weight"), -1, at::kFloat);
    auto [chosenWeights, chosen] = probabilities.topk(arch.expertsPerToken(), -1);
    if (arch.normalizesExpertWeights()) {
        chosenWeights = chosenWeights / chosenWeights.sum(-1, true);
    }
    chosenWeights = chosenWeights.to(flat.scalar_type());
    // Only the experts some token chose compute, each on its tokens (Qwen3NextExperts' loop).
    const at::Tensor chosenHere = chosen.to(at::kCPU).contiguous();
    const int64_t* ids = chosenHere.data_ptr<int64_t>();
    std::vector<bool> used(static_cast<size_t>(arch.numExperts()), false);
    for (int64_t i = 0; i < chosenHere.numel(); ++i) {
        used[static_cast<size_t>(ids[i])] = true;
    }
    at::Tensor mixed = at::zeros_like(flat);
    for (int64_t expert = 0; expert < arch.numExperts(); ++expert) {
        if (!used[static_cast<size_t>(expert)]) {
            continue;
        }
        const at::Tensor hit = chosen == expert;                      // [tokens, k]: at most one per row
        const at::Tensor rows = hit.any(-1).nonzero().squeeze(-1);
        const at::Tensor scale = (chosenWeights * hit).sum(-1).index_select(0, rows).unsqueeze(-1);
        const std::string e = p + "experts." + std::to_string(expert) + ".";
        mixed = mixed.index_add(0, rows, gatedProduct(e, flat.index_select(0, rows)) * scale);
    }
    const at::Tensor shared = gatedProduct(p + "shared_expert.", flat) *
                              at::sigmoid(linear(flat, p + "shared_expert_gate.weight"));
    return (mixed + shared).reshape(hidden.sizes());
}

at::Tensor Decoder::gatedProduct(const std::string& prefix, const at::Tensor& hidden) const {
    const std::vector<at::Tensor> gateUp =
        m_parameters.linearStacked(hidden, {prefix + "gate_proj.weight", prefix + "up_proj.weight"});
    return linear(ops::gatedActivation(gateUp[0], gateUp[1], m_architecture.activation()), prefix + "down_proj.weight");
}

at::Tensor Decoder::mlp(int64_t layer, const at::Tensor& hidden) const {
    if (m_architecture.hasSparseExperts(layer)) {
        return sparseExperts(layer, hidden);
    }
    const std::string p = layerPrefix(layer) + "mlp.";
    const auto dense = [&](const at::Tensor& rows) {
        if (!m_architecture.fusedProjections()) {
            return gatedProduct(p, rows);
        }
        // Phi-3's gate_up_proj: gate rows first, then up rows; it computes up * act(gate), the same product.
        at::Tensor fused = linear(rows, p + "gate_up_proj.weight");
        const at::Tensor gate = fused.narrow(-1, 0, m_architecture.intermediateSize());
        const at::Tensor up = fused.narrow(-1, m_architecture.intermediateSize(), m_architecture.intermediateSize());
        return linear(ops::gatedActivation(gate, up, m_architecture.activation()), p + "down_proj.weight");
    };
    const int64_t tokens = hidden.size(1);
    if (tokens <= kMlpTokens || (at::GradMode::is_enabled() && hidden.requires_grad())) {
        return dense(hidden);
    }
    at::Tensor output = at::empty_like(hidden, at::MemoryFormat::Contiguous);
    for (int64_t first = 0; first < tokens; first += kMlpTokens) {
        const int64_t count = std::min(kMlpTokens, tokens - first);
        output.narrow(1, first, count).copy_(dense(hidden.narrow(1, first, count)));
    }
    return output;
}

} // namespace kvscope::model
