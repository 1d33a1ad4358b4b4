// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/CachePressHook.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/config/PressDescriptions.h"
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
        throw GenerationError(
            "a static cache preallocates max_cache_len slots per layer and cannot drop tokens; "
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
    try {
        m_press = press::PressCatalog::generation(m_settings);
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
    const auto passes = m_passes.find(layer);
    return m_press->wantsAttentionWeights(layer, passes != m_passes.end() ? passes->second : 0);
}

press::PressInputs CachePressHook::inputsOf(const model::AttentionPass& pass,
                                            const model::Architecture& architecture) {
    press::PressInputs inputs;
    inputs.keys = pass.keys;
    inputs.values = pass.values;
    inputs.hiddenStates = pass.hiddenStates;
    inputs.queryWeight = pass.queryWeight;
    inputs.queryBias = pass.queryBias;
    inputs.queryNormWeight = pass.queryNormWeight;
    inputs.keyWeight = pass.keyWeight;
    inputs.keyBias = pass.keyBias;
    inputs.keyNormWeight = pass.keyNormWeight;
    inputs.outputWeight = pass.outputWeight;
    inputs.normEpsilon = architecture.config().rmsNormEps;
    inputs.normAddsOne = architecture.normAddsOne();
    inputs.inverseFrequencies = pass.inverseFrequencies;
    inputs.cos = pass.cos;
    inputs.sin = pass.sin;
    inputs.attentionReceived = pass.attentionReceived;
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
    if (at::Tensor& shift = m_rotationShifts[pass.layer]; shift.defined()) {
        shift = at::cat({shift, at::zeros_like(fresh)}, 2); // new keys carry their own positions' rotation
    }

    const press::PressInputs inputs = inputsOf(pass, m_architecture);
    press::PressAction action =
        m_press->onPass(inputs, press::PressPass{passIndex, pass.queryLength, m_settings.ratio, positions});
    if (action.keys.defined() && !action.kept.defined()) {
        // Keys rewritten, every token kept (a key-channel press): a decision that drops nothing.
        action.kept =
            at::arange(positions.size(2), positions.options()).expand(positions.sizes()).contiguous();
    }
    if (action.masked.defined()) {
        mask(pass, action);
    } else if (action.kept.defined()) {
        apply(pass, action);
    }
}

void CachePressHook::apply(const model::AttentionPass& pass, const press::PressAction& action) {
    const at::Tensor& kept = action.kept;
    const at::Tensor& scores = action.scores;
    cache::AttentionLayer& layer =
        *pass.cache->selfAttention().layer(static_cast<size_t>(pass.layer)).asAttention();
    at::Tensor& positions = m_positions[pass.layer];
    const int64_t before = positions.size(2);
    layer.keepTokens(kept);
    pass.cache->addEvictedTokens(pass.layer, before - kept.size(2));
    if (action.keys.defined()) {
        // Keys of the kept slots, in kept's order (ThinK's zeroed channels, KeyRerotation's new angles).
        layer.rewriteKeys(action.keys);
    }

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
        std::get<1>(at::sort(dropped.to(at::kInt), /*stable=*/true, -1, /*descending=*/true))
            .narrow(2, 0, before - decision.after);
    decision.droppedPositions = positions.gather(2, droppedSlots).cpu();
    if (scores.defined()) {
        decision.droppedScores = scores.gather(2, droppedSlots).to(at::kCPU, at::kFloat);
        decision.keptScores = scores.gather(2, kept).to(at::kCPU, at::kFloat);
    }
    if (const auto channels = action.details.find("pruned_channels"); channels != action.details.end()) {
        decision.prunedChannels = channels->second.cpu();
    }
    positions = press::TopKSelection::gather(positions, kept);
    decision.keptPositions = positions.cpu();
    at::Tensor& shift = m_rotationShifts[pass.layer];
    if (shift.defined() || action.rotationShift.defined()) {
        const at::Tensor carried = shift.defined() ? press::TopKSelection::gather(shift, kept) : at::Tensor();
        shift = !action.rotationShift.defined() ? carried
                : carried.defined()             ? carried + action.rotationShift.to(carried.device())
                                                : action.rotationShift.to(positions.device(), at::kLong);
        decision.rotaryPositions = (positions + shift).cpu();
    }
    record(pass, std::move(decision));
    // The layer holds fewer tokens now: its memory follows the Compression event, so that the memory chart
    // shows the step's bytes after the press, not before.
    pass.cache->selfAttention().reportRewrittenLayer(static_cast<size_t>(pass.layer));
}

void CachePressHook::record(const model::AttentionPass& pass, PressDecision decision) {
    trace::EventEmitter& emitter = pass.cache->selfAttention().eventEmitter();
    if (emitter.enabled()) {
        emitter.emit(static_cast<std::int32_t>(pass.layer),
                     decision.masked.defined() ? maskEventOf(decision) : eventOf(decision));
    }
    m_decisions.push_back(std::move(decision));
}

void CachePressHook::mask(const model::AttentionPass& pass, const press::PressAction& decided) {
    pass.cache->setMaskedSlots(pass.layer, decided.masked);

    PressDecision decision;
    decision.step = m_passes[pass.layer] - 1;
    decision.layer = pass.layer;
    decision.press = m_settings.name;
    decision.before = decided.masked.size(2);
    decision.after = decision.before;
    decision.masked = decided.masked.cpu();
    decision.positions = m_positions[pass.layer].cpu();
    decision.scores = decided.scores.to(at::kCPU, at::kFloat);
    record(pass, std::move(decision));
}

trace::CompressionEvent CachePressHook::maskEventOf(const PressDecision& decision) {
    trace::CompressionEvent event;
    const at::Tensor masked = decision.masked[0]; // batch row 0: [heads, before]
    const at::Tensor positions = decision.positions[0];
    const at::Tensor scores = decision.scores[0];
    event.lengthBefore = static_cast<std::int32_t>(decision.before);
    event.lengthAfter = event.lengthBefore; // masked, not evicted
    event.heads = static_cast<std::int32_t>(masked.size(0));
    const at::Tensor maskedCounts = masked.sum(-1).to(at::kLong);
    event.droppedCount = static_cast<std::int32_t>(maskedCounts.sum().item<int64_t>());
    const bool keptFits = static_cast<int64_t>(event.heads) * decision.before - event.droppedCount <=
                          trace::kCompressionKeptLimit;
    std::vector<std::int64_t> droppedPositions;
    for (int64_t head = 0; head < event.heads; ++head) {
        // Each head's own kept and masked slots, in position order.
        const at::Tensor keptSlots = masked[head].logical_not().nonzero().squeeze(1);
        const at::Tensor maskedSlots = masked[head].nonzero().squeeze(1);
        event.keptPerHead.push_back(static_cast<std::int32_t>(keptSlots.size(0)));
        if (keptFits) {
            const at::Tensor kept = positions[head].index_select(0, keptSlots).contiguous();
            event.positions.insert(event.positions.end(), kept.data_ptr<int64_t>(),
                                   kept.data_ptr<int64_t>() + kept.numel());
            const at::Tensor keptScores = scores[head].index_select(0, keptSlots).contiguous();
            event.keptScores.insert(event.keptScores.end(), keptScores.data_ptr<float>(),
                                    keptScores.data_ptr<float>() + keptScores.numel());
        }
        const int64_t stride = trace::CompressionLayout::droppedStride(maskedSlots.size(0), event.heads);
        const at::Tensor recorded = maskedSlots.slice(0, 0, maskedSlots.size(0), stride);
        const at::Tensor dropped = positions[head].index_select(0, recorded).contiguous();
        droppedPositions.insert(droppedPositions.end(), dropped.data_ptr<int64_t>(),
                                dropped.data_ptr<int64_t>() + dropped.numel());
        const at::Tensor droppedScores = scores[head].index_select(0, recorded).contiguous();
        event.droppedScores.insert(event.droppedScores.end(), droppedScores.data_ptr<float>(),
                                   droppedScores.data_ptr<float>() + droppedScores.numel());
    }
    event.keptRecorded = keptFits ? static_cast<std::int32_t>(event.positions.size()) : 0;
    event.positions.insert(event.positions.end(), droppedPositions.begin(), droppedPositions.end());
    return event;
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
    if (decision.rotaryPositions.defined() && event.keptRecorded > 0) {
        const at::Tensor rotary = decision.rotaryPositions[0].to(at::kLong).contiguous();
        event.rotaryPositions.assign(rotary.data_ptr<int64_t>(), rotary.data_ptr<int64_t>() + rotary.numel());
    }
    if (decision.prunedChannels.defined()) {
        const at::Tensor channels = decision.prunedChannels[0].to(at::kInt).contiguous();
        event.prunedChannels.assign(channels.data_ptr<std::int32_t>(),
                                    channels.data_ptr<std::int32_t>() + channels.numel());
    }
    // Every k-th dropped token per head, so that a large eviction stays a small record.
    const int64_t stride = trace::CompressionLayout::droppedStride(event.droppedCount, event.heads);
    if (event.droppedCount > 0) {
        const at::Tensor dropped =
            decision.droppedPositions[0].slice(1, 0, event.droppedCount, stride).contiguous();
        event.positions.insert(event.positions.end(), dropped.data_ptr<int64_t>(),
                               dropped.data_ptr<int64_t>() + dropped.numel());
        if (decision.droppedScores.defined()) {
            const at::Tensor scores =
                decision.droppedScores[0].slice(1, 0, event.droppedCount, stride).contiguous();
            event.droppedScores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
        }
    }
    return event;
}

} // namespace kvscope::runtime
