// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/model/AttentionObserver.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/trace/Event.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::model {
class Architecture;
}

namespace kvscope::runtime {

/// One compression of one layer's cache.
struct PressDecision {
    /// The generation step (0 = prefill) and layer.
    int64_t step = 0;
    int64_t layer = 0;
    std::string press;
    /// Tokens per KV head before and after.
    int64_t before = 0;
    int64_t after = 0;
    /// Positions [B, Hkv, after] now cached, per head.
    at::Tensor keptPositions;
    /// Positions and scores [B, Hkv, before - after] of the evicted tokens (scores undefined for H2O's
    /// first eviction or where the press computes none).
    at::Tensor droppedPositions;
    at::Tensor droppedScores;
    /// Scores [B, Hkv, after] of the kept tokens, in keptPositions' order (undefined likewise).
    at::Tensor keptScores;
    /// A masking press (AdaKV) only: the cache keeps its `before` slots (after == before, keptPositions and
    /// droppedPositions undefined); [B, Hkv, before] true where the head masks the slot, at `positions`
    /// [B, Hkv, before], with the base press's `scores` [B, Hkv, before]. Heads mask different counts.
    at::Tensor masked;
    at::Tensor positions;
    at::Tensor scores;
    /// A channel press (ThinK) only: the key channels [B, Hkv, n] it zeroed; every token stays (after ==
    /// before, keptPositions every slot), and the cache keeps its size.
    at::Tensor prunedChannels;
    /// A press that re-rotated kept keys (KeyRerotation, alone or as a composed stage) only: the position
    /// each kept key's rotary embedding now encodes [B, Hkv, after], in keptPositions' order (KeyRerotation:
    /// 0..n-1 for positions p_0 < p_1 < ...). Undefined while every cached key keeps the rotation of its
    /// position.
    at::Tensor rotaryPositions;
};

/// Applies a cache press to a real generation, as kvpress's forward hooks do: the press the registry builds
/// for the run (press::PressCatalog::generation) sees every pass of every layer and decides; the hook
/// applies its decision and logs it. A scorer press compresses each layer right after the prefill's
/// attention, DecodingPress and H2O compress while decoding. Kept tokens keep their positions
/// (ModelCache::evictedTokens); sliding-window layers are left alone. A masking press (AdaKV) evicts
/// nothing: it masks each head's pruned slots from every later query (ModelCache::setMaskedSlots), as
/// kvpress's attention patch does. A press that rewrites keys (ThinK zeroes channels, KeyRerotation
/// re-rotates the kept keys) has them written back in place (AttentionLayer::rewriteKeys).
class CachePressHook : public model::AttentionObserver {
public:
    /// Refuses unknown presses and options, naming the allowed ones, and caches a press cannot shrink.
    CachePressHook(const model::Architecture& architecture, const config::CacheSettings& cache, int64_t beams,
                   config::PressSettings settings);
    /// The hook a run's settings ask for, null without a press: the one place `kvscope-cli run` and the
    /// GUI's live sessions build it, so both compress alike.
    static std::unique_ptr<CachePressHook> forRun(const model::Architecture& architecture,
                                                  const config::RunSettings& run);
    ~CachePressHook() override;

    bool wantsAttentionWeights(int64_t layer, int64_t queryLength) const override;
    void afterAttention(const model::AttentionPass& pass) override;

    const std::vector<PressDecision>& decisions() const { return m_decisions; }
    /// What the press left alone and why (one line per layer).
    const std::vector<std::string>& notices() const { return m_notices; }
    const config::PressSettings& settings() const { return m_settings; }
    /// What a press reads of one attention pass of `architecture`'s model.
    static press::PressInputs inputsOf(const model::AttentionPass& pass, const model::Architecture& architecture);

private:
    void apply(const model::AttentionPass& pass, const press::PressAction& action);
    void mask(const model::AttentionPass& pass, const press::PressAction& action);
    /// Emits the decision's trace event (when recording) and keeps it.
    void record(const model::AttentionPass& pass, PressDecision decision);
    /// The trace record of a decision (sessions/FORMAT.md, kind 15), lists downsampled when large.
    static trace::CompressionEvent eventOf(const PressDecision& decision);
    /// The same for a masking decision: keptPerHead, and lengthAfter = lengthBefore.
    static trace::CompressionEvent maskEventOf(const PressDecision& decision);

    const model::Architecture& m_architecture;
    config::PressSettings m_settings;
    std::unique_ptr<press::CachePress> m_press;
    /// Per layer: the positions of its cached slots [B, Hkv, L] and the passes it has seen.
    std::map<int64_t, at::Tensor> m_positions;
    /// Per layer, once a press re-rotated keys: how far each cached slot's rotation is from its position
    /// [B, Hkv, L] (undefined: nowhere).
    std::map<int64_t, at::Tensor> m_rotationShifts;
    std::map<int64_t, int64_t> m_passes;
    std::vector<PressDecision> m_decisions;
    std::vector<std::string> m_notices;
};

} // namespace kvscope::runtime
