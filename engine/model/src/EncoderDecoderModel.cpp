// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/EncoderDecoderModel.h"

#include "kvscope/model/TensorOps.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/EncoderDecoderCache.h"
#include "kvscope/model/MaskBuilder.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace kvscope::model {
namespace {

void addAttention(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t hidden) {
    // Whisper: q, v and out have biases, k has none.
    for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
        specs.push_back({prefix + name + ".weight", {hidden, hidden}});
        if (std::string(name) != "k_proj") {
            specs.push_back({prefix + name + ".bias", {hidden}, 0.0, 0.1});
        }
    }
}

void addLayerNorm(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t hidden) {
    specs.push_back({prefix + ".weight", {hidden}, 1.0, 0.1});
    specs.push_back({prefix + ".bias", {hidden}, 0.0, 0.1});
}

void addFeedForward(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t hidden, int64_t ffn) {
    specs.push_back({prefix + "fc1.weight", {ffn, hidden}});
    specs.push_back({prefix + "fc1.bias", {ffn}, 0.0, 0.1});
    specs.push_back({prefix + "fc2.weight", {hidden, ffn}});
    specs.push_back({prefix + "fc2.bias", {hidden}, 0.0, 0.1});
}

} // namespace

EncoderDecoderModel::EncoderDecoderModel(Architecture architecture, ParameterStore parameters)
    : LanguageModel(std::move(architecture), std::move(parameters)) {
    if (!m_architecture.isEncoderDecoder()) {
        throw ModelError("model_type `" + config().modelType + "` is decoder-only; use Decoder");
    }
    m_parameters.check(parameterSpecs(m_architecture));
}

EncoderDecoderModel::~EncoderDecoderModel() = default;

std::vector<ParameterSpec> EncoderDecoderModel::parameterSpecs(const Architecture& arch) {
    const config::ModelConfig& c = arch.config();
    const int64_t hidden = arch.hiddenSize();
    std::vector<ParameterSpec> specs;
    specs.push_back({"model.encoder.conv1.weight", {hidden, c.numMelBins, 3}, 0.0, 1.0 / std::sqrt(3.0 * c.numMelBins)});
    specs.push_back({"model.encoder.conv1.bias", {hidden}, 0.0, 0.1});
    specs.push_back({"model.encoder.conv2.weight", {hidden, hidden, 3}, 0.0, 1.0 / std::sqrt(3.0 * hidden)});
    specs.push_back({"model.encoder.conv2.bias", {hidden}, 0.0, 0.1});
    ParameterSpec positions{"model.encoder.embed_positions.weight", {c.maxSourcePositions, hidden}};
    positions.sinusoids = true;
    specs.push_back(positions);
    for (int64_t layer = 0; layer < c.encoderLayers; ++layer) {
        const std::string p = "model.encoder.layers." + std::to_string(layer) + ".";
        addAttention(specs, p + "self_attn.", hidden);
        addLayerNorm(specs, p + "self_attn_layer_norm", hidden);
        addFeedForward(specs, p, hidden, c.encoderFfnDim);
        addLayerNorm(specs, p + "final_layer_norm", hidden);
    }
    addLayerNorm(specs, "model.encoder.layer_norm", hidden);
    specs.push_back({"model.decoder.embed_tokens.weight", {arch.vocabSize(), hidden}});
    specs.push_back({"model.decoder.embed_positions.weight", {c.maxPositionEmbeddings, hidden}});
    for (int64_t layer = 0; layer < arch.numLayers(); ++layer) {
        const std::string p = "model.decoder.layers." + std::to_string(layer) + ".";
        addAttention(specs, p + "self_attn.", hidden);
        addLayerNorm(specs, p + "self_attn_layer_norm", hidden);
        addAttention(specs, p + "encoder_attn.", hidden);
        addLayerNorm(specs, p + "encoder_attn_layer_norm", hidden);
        addFeedForward(specs, p, hidden, arch.intermediateSize());
        addLayerNorm(specs, p + "final_layer_norm", hidden);
    }
    addLayerNorm(specs, "model.decoder.layer_norm", hidden);
    return specs;
}

at::Tensor EncoderDecoderModel::optional(const std::string& name) const {
    return m_parameters.contains(name) ? m_parameters.get(name) : at::Tensor();
}

at::Tensor EncoderDecoderModel::syntheticFeatures(int64_t melBins, int64_t frames) {
    // A fixed, smooth "spectrogram": every bin a sinusoid of its own frequency and phase.
    at::Tensor bins = at::arange(melBins, at::kFloat).unsqueeze(1);
    at::Tensor time = at::arange(frames, at::kFloat).unsqueeze(0);
    return (at::sin(time * (0.05 * (bins + 1.0)) + bins) * 0.5).unsqueeze(0);
}

const at::Tensor& EncoderDecoderModel::encoderOutput() {
    if (m_encoderOutput.defined()) {
        return m_encoderOutput;
    }
    at::NoGradGuard noGrad;
    const config::ModelConfig& c = config();
    const std::vector<int64_t> one{1};
    const std::vector<int64_t> two{2};
    at::Tensor features = syntheticFeatures(c.numMelBins, 2 * c.maxSourcePositions).to(m_device);
    at::Tensor x = at::gelu(at::conv1d(features, weight("model.encoder.conv1.weight"), weight("model.encoder.conv1.bias"),
                                       one, one));
    x = at::gelu(at::conv1d(x, weight("model.encoder.conv2.weight"), weight("model.encoder.conv2.bias"), two, one));
    x = x.transpose(1, 2) + weight("model.encoder.embed_positions.weight").unsqueeze(0);
    for (int64_t layer = 0; layer < c.encoderLayers; ++layer) {
        const std::string p = "model.encoder.layers." + std::to_string(layer) + ".";
        at::Tensor normed =
            ops::layerNorm(x, weight(p + "self_attn_layer_norm.weight"), weight(p + "self_attn_layer_norm.bias"));
        x = x + selfAttention(p + "self_attn.", normed, c.encoderAttentionHeads);
        normed = ops::layerNorm(x, weight(p + "final_layer_norm.weight"), weight(p + "final_layer_norm.bias"));
        x = x + feedForward(p, normed);
    }
    m_encoderOutput = ops::layerNorm(x, weight("model.encoder.layer_norm.weight"), weight("model.encoder.layer_norm.bias"));
    return m_encoderOutput;
}

at::Tensor EncoderDecoderModel::selfAttention(const std::string& prefix, const at::Tensor& hidden, int64_t heads) const {
    // The encoder's bidirectional attention: no mask.
    at::Tensor q = ops::splitHeads(ops::linear(hidden, weight(prefix + "q_proj.weight"), weight(prefix + "q_proj.bias")), heads);
    at::Tensor k = ops::splitHeads(ops::linear(hidden, weight(prefix + "k_proj.weight")), heads);
    at::Tensor v = ops::splitHeads(ops::linear(hidden, weight(prefix + "v_proj.weight"), weight(prefix + "v_proj.bias")), heads);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    return ops::linear(ops::attend(q, k, v, at::Tensor(), scale), weight(prefix + "out_proj.weight"),
                       weight(prefix + "out_proj.bias"));
}

at::Tensor EncoderDecoderModel::feedForward(const std::string& prefix, const at::Tensor& hidden) const {
    at::Tensor inner = ops::activate(ops::linear(hidden, weight(prefix + "fc1.weight"), weight(prefix + "fc1.bias")),
                                     m_architecture.activation());
    return ops::linear(inner, weight(prefix + "fc2.weight"), weight(prefix + "fc2.bias"));
}

at::Tensor EncoderDecoderModel::forward(const at::Tensor& inputIds, ModelCache* modelCache, const at::Tensor& attentionMask) {
    at::NoGradGuard noGrad;
    const Architecture& arch = m_architecture;
    cache::EncoderDecoderCache* caches = nullptr;
    if (modelCache != nullptr) {
        caches = modelCache->encoderDecoder();
        if (caches == nullptr) {
            throw ModelError("an encoder-decoder model needs an encoder-decoder cache (self-attention plus "
                             "cross-attention), got a decoder-only cache");
        }
    }
    const at::Tensor ids = checkedInputIds(inputIds);
    const int64_t batch = ids.size(0);
    const int64_t length = ids.size(1);
    const int64_t queryOffset = caches != nullptr ? caches->seqLength(0) : 0;
    const at::Tensor padding = checkedAttentionMask(attentionMask, batch, queryOffset + length);
    if (queryOffset + length > config().maxPositionEmbeddings) {
        throw ModelError("the decoder has " + std::to_string(config().maxPositionEmbeddings) +
                         " positions (max_target_positions) but this forward reaches position " +
                         std::to_string(queryOffset + length));
    }
    const int64_t heads = arch.numHeads();
    const double scale = 1.0 / std::sqrt(static_cast<double>(arch.headDim()));
    at::Tensor encoded = encoderOutput().expand({batch, -1, -1});

    at::Tensor x = ops::embed(weight("model.decoder.embed_tokens.weight"), ids) +
                   weight("model.decoder.embed_positions.weight").narrow(0, queryOffset, length).unsqueeze(0).to(at::kFloat);
    at::Tensor mask;
    cache::MaskSizes maskedSizes{-1, -1};
    for (int64_t layer = 0; layer < arch.numLayers(); ++layer) {
        const std::string p = "model.decoder.layers." + std::to_string(layer) + ".";
        // Self-attention through the self-attention cache.
        at::Tensor normed =
            ops::layerNorm(x, weight(p + "self_attn_layer_norm.weight"), weight(p + "self_attn_layer_norm.bias"));
        const std::string s = p + "self_attn.";
        at::Tensor q = ops::splitHeads(ops::linear(normed, weight(s + "q_proj.weight"), weight(s + "q_proj.bias")), heads);
        at::Tensor k = ops::splitHeads(ops::linear(normed, weight(s + "k_proj.weight")), heads);
        at::Tensor v = ops::splitHeads(ops::linear(normed, weight(s + "v_proj.weight"), weight(s + "v_proj.bias")), heads);
        cache::MaskSizes sizes{length, 0};
        if (caches != nullptr) {
            sizes = caches->selfAttentionCache().maskSizes(length, layer);
            cache::KeyValueStates updated = caches->selfAttentionCache().update(k, v, layer);
            k = updated.keys;
            v = updated.values;
        }
        if (k.size(2) != sizes.kvLength) {
            throw ModelError("self-attention cache layer " + std::to_string(layer) + " returned " +
                             std::to_string(k.size(2)) + " key rows but its mask sizes promised " +
                             std::to_string(sizes.kvLength));
        }
        if (!(sizes == maskedSizes)) {
            mask = MaskBuilder::build(AttentionKind::FullAttention, 0, length, queryOffset, sizes, padding, m_device);
            maskedSizes = sizes;
        }
        x = x + ops::linear(ops::attend(q, k, v, mask, scale), weight(s + "out_proj.weight"), weight(s + "out_proj.bias"));

        // Cross-attention: keys/values of the encoder output, computed once per cache.
        normed = ops::layerNorm(x, weight(p + "encoder_attn_layer_norm.weight"),
                                weight(p + "encoder_attn_layer_norm.bias"));
        const std::string e = p + "encoder_attn.";
        q = ops::splitHeads(ops::linear(normed, weight(e + "q_proj.weight"), weight(e + "q_proj.bias")), heads);
        if (caches != nullptr && caches->isUpdated(layer)) {
            const cache::AttentionLayer* stored =
                caches->crossAttentionCache().layer(static_cast<size_t>(layer)).asAttention();
            k = stored->keys();
            v = stored->values();
        } else {
            k = ops::splitHeads(ops::linear(encoded, weight(e + "k_proj.weight")), heads);
            v = ops::splitHeads(ops::linear(encoded, weight(e + "v_proj.weight"), weight(e + "v_proj.bias")), heads);
            if (caches != nullptr) {
                cache::KeyValueStates updated = caches->crossAttentionCache().update(k, v, layer);
                k = updated.keys;
                v = updated.values;
                caches->setUpdated(layer, true);
            }
        }
        if (k.size(0) != batch) {
            throw ModelError("cross-attention cache layer " + std::to_string(layer) + " holds a batch of " +
                             std::to_string(k.size(0)) + " but the decoder input has " + std::to_string(batch));
        }
        x = x + ops::linear(ops::attend(q, k, v, at::Tensor(), scale), weight(e + "out_proj.weight"),
                            weight(e + "out_proj.bias"));

        normed = ops::layerNorm(x, weight(p + "final_layer_norm.weight"), weight(p + "final_layer_norm.bias"));
        x = x + feedForward(p, normed);
    }
    x = ops::layerNorm(x, weight("model.decoder.layer_norm.weight"), weight("model.decoder.layer_norm.bias"));
    return ops::linear(x, weight("model.decoder.embed_tokens.weight"));
}

} // namespace kvscope::model
