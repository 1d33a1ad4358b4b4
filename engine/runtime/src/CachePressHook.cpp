// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/CachePressHook.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/model/Architecture.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/press/TopKSelection.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/EventEmitter.h"

#include <ATen/ATen.h>

namespace kvscope::runtime {

CachePressHook::CachePressHook(const model::Architecture& architecture, const config::CacheSettings& cache,
                               int64_t beams, config::PressSettings settings)
    : m_architecture(architecture), m_settings(std::move(settings)) {
    if (cache.kind == config::CacheKind::Static) {
        throw GenerationError("a static cache preallocates max_cache_len slots per layer and cannot drop tokens; "
                              "a press needs a dynamic, quantized or offloaded cache");
    }
    if (beams > 1) {
        throw GenerationError("a press compresses each row's cache differently; use beams 1 with --press");
    }
    if (architecture.isEncoderDecoder()) {
        throw GenerationError("presses work on decoder-only models; this model is an encoder-decoder");
    }
    if (!(m_settings.ratio >= 0.0 && m_settings.ratio < 1.0)) {
        throw GenerationError("--ratio must be in [0, 1), got " + std::to_string(m_settings.ratio));
    }
    const std::string& name = m_settings.name;
    try {
        if (name == "decoding") {
            m_decoding = std::make_unique<press::DecodingPress>(press::PressCatalog::decoding(m_settings.options));
            if (m_decoding->base().reads().attentions) {
                throw GenerationError("decoding press: base observed_attention needs the prefill's attention "
                                      "weights; choose another base (knorm, snapkv, tova, streaming_llm, ...)");
            }
        } else if (name == "h2o") {
            m_h2o = std::make_unique<press::H2oPress>(press::PressCatalog::h2o(m_settings.options));
        } else if (name == "adakv") {
            (void)press::PressCatalog::adaKv(m_settings.options);
            throw GenerationError("adakv masks tokens per head inside attention; run applies evicting presses "
                                  "(streaming_llm, knorm, snapkv, tova, pyramidkv, observed_attention, "
                                  "expected_attention, random, decoding, h2o); conform checks adakv");
        } else {
            m_scorer = press::PressCatalog::scorer(name, m_settings.options);
        }
    } catch (const std::invalid_argument& error) {
        throw GenerationError(error.what());
    }
}

CachePressHook::~CachePressHook() = default;

std::unique_ptr<CachePressHook> CachePressHook::forRun(const model::Architecture& architecture,
                                                       const config::RunSettings& run) {
    if (run.press.name.empty()) {
        return nullptr;
    }
    return std::make_unique<CachePressHook>(architecture, run.cache, run.beams, run.press);
}

bool CachePressHook::wantsAttentionWeights(int64_t layer, int64_t) const {
    if (m_h2o) {
        return true;
    }
    // Only the prefill pass (a layer's first) of a scorer that reads attention weights.
    return m_scorer && m_scorer->reads().attentions && m_passes.count(layer) == 0;
}

press::PressInputs CachePressHook::inputsOf(const model::AttentionPass& pass, const model::Architecture& architecture) {
    press::PressInputs inputs;
    inputs.keys = pass.keys;
    inputs.values = pass.values;
    inputs.hiddenStates = pass.hiddenStates;
    inputs.queryWeight = pass.queryWeight;
    inputs.queryBias = pass.queryBias;
    inputs.queryNormWeight = pass.queryNormWeight;
    inputs.normEpsilon = architecture.config().rmsNormEps;
    inputs.normAddsOne = architecture.normAddsOne();
    inputs.inverseFrequencies = pass.inverseFrequencies;
    inputs.cos = pass.cos;
    inputs.sin = pass.sin;
    inputs.attentions = pass.attentionWeights;
    inputs.numHeads = architecture.numHeads();
    inputs.numKeyValueHeads = architecture.numKvHeads();
    inputs.headDim = architecture.headDim();
    inputs.layerIndex = pass.layer;
    inputs.numLayers = architecture.numLayers();
    inputs.ropeTheta = architecture.config().ropeTheta;
    return inputs;
}

void CachePressHook::afterAttention(const model::AttentionPass& pass) {
    if (pass.cache == nullptr) {
        return;
    }
    cache::CacheLayer& layer = pass.cache->selfAttention().layer(static_cast<size_t>(pass.layer));
    if (layer.asAttention() == nullptr) {
        return;
    }
    const int64_t passIndex = m_passes[pass.layer]++;
    if (layer.isSliding()) {
        if (passIndex == 0) {
            m_notices.push_back("layer " + std::to_string(pass.layer) + " is a " + layer.typeName() +
                                ": its window already bounds it, the press leaves it alone");
        }
        return;
    }
    const int64_t batch = pass.keys.size(0);
    const int64_t heads = pass.keys.size(1);
    const at::Tensor fresh = pass.positions.to(pass.keys.device()).unsqueeze(1).expand({batch, heads, -1});
    at::Tensor& positions = m_positions[pass.layer];
    positions = positions.defined() ? at::cat({positions, fresh}, 2) : fresh.contiguous();

    const press::PressInputs inputs = inputsOf(pass, m_architecture);
    if (m_scorer && passIndex == 0 && m_settings.ratio > 0.0) {
        const press::PressSelection selection = m_scorer->select(inputs, m_settings.ratio);
        apply(pass, selection.keptIndices, selection.scores);
    } else if (m_decoding && passIndex > 0 && m_decoding->append(inputs, pass.queryLength)) {
        const press::DecodingStep step = m_decoding->compress(inputs);
        if (step.ratio > 0.0) {
            apply(pass, step.selection.keptIndices, step.selection.scores);
        }
    } else if (m_h2o) {
        const at::Tensor kept = m_h2o->step(pass.layer, pass.attentionWeights, heads);
        if (kept.defined()) {
            // The accumulated attention before the eviction is the score H2O ranked by.
            apply(pass, kept, at::Tensor());
        }
    }
}

void CachePressHook::apply(const model::AttentionPass& pass, const at::Tensor& kept, const at::Tensor& scores) {
    cache::AttentionLayer& layer = *pass.cache->selfAttention().layer(static_cast<size_t>(pass.layer)).asAttention();
    at::Tensor& positions = m_positions[pass.layer];
    const int64_t before = positions.size(2);
    layer.keepTokens(kept);
    pass.cache->addEvictedTokens(pass.layer, before - kept.size(2));

    PressDecision decision;
    decision.step = m_passes[pass.layer] - 1;
    decision.layer = pass.layer;
    decision.press = m_settings.name;
    decision.before = before;
    decision.after = kept.size(2);
    at::Tensor dropped = at::ones_like(positions, positions.options().dtype(at::kBool));
    dropped.scatter_(2, kept, false);
    // Every head drops the same number of tokens, so the dropped slots reshape per head.
    const at::Tensor droppedSlots =
        std::get<1>(at::sort(dropped.to(at::kInt), /*stable=*/true, -1, /*descending=*/true)).narrow(2, 0, before - decision.after);
    decision.droppedPositions = positions.gather(2, droppedSlots).cpu();
    if (scores.defined()) {
        decision.droppedScores = scores.gather(2, droppedSlots).to(at::kCPU, at::kFloat);
        decision.keptScores = scores.gather(2, kept).to(at::kCPU, at::kFloat);
    }
    positions = press::TopKSelection::gather(positions, kept);
    decision.keptPositions = positions.cpu();
    trace::EventEmitter& emitter = pass.cache->selfAttention().eventEmitter();
    if (emitter.enabled()) {
        emitter.emit(static_cast<std::int32_t>(pass.layer), eventOf(decision));
    }
    m_decisions.push_back(std::move(decision));
}

trace::CompressionEvent CachePressHook::eventOf(const PressDecision& decision) {
    trace::CompressionEvent event;
    const at::Tensor kept = decision.keptPositions[0].contiguous(); // batch row 0: [heads, after]
    event.lengthBefore = static_cast<std::int32_t>(decision.before);
    event.lengthAfter = static_cast<std::int32_t>(decision.after);
    event.heads = static_cast<std::int32_t>(kept.size(0));
    event.droppedCount = static_cast<std::int32_t>(decision.before - decision.after);
    if (kept.numel() <= trace::kCompressionKeptLimit) {
        event.keptRecorded = static_cast<std::int32_t>(kept.numel());
        event.positions.assign(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel());
        if (decision.keptScores.defined()) {
            const at::Tensor scores = decision.keptScores[0].contiguous();
            event.keptScores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
        }
    }
    // Every k-th dropped token per head, so that a large eviction stays a small record.
    const int64_t stride = trace::CompressionLayout::droppedStride(event.droppedCount, event.heads);
    if (event.droppedCount > 0) {
        const at::Tensor dropped = decision.droppedPositions[0].slice(1, 0, event.droppedCount, stride).contiguous();
        event.positions.insert(event.positions.end(), dropped.data_ptr<int64_t>(),
                               dropped.data_ptr<int64_t>() + dropped.numel());
        if (decision.droppedScores.defined()) {
            const at::Tensor scores = decision.droppedScores[0].slice(1, 0, event.droppedCount, stride).contiguous();
            event.droppedScores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
        }
    }
    return event;
}

} // namespace kvscope::runtime
