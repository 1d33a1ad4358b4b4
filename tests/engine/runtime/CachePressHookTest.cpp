// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/CachePressHook.h"

#include "ModelTestHelpers.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/AttachedAttentionObserver.h"
#include "kvscope/model/AttentionObserver.h"
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/AdaKvPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/SnapKvPress.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/StepState.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <gtest/gtest.h>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace {

using kvscope::config::PressSettings;
using kvscope::model::AttachedAttentionObserver;
using kvscope::model::ByteTokenizer;
using kvscope::model::ModelLoader;
using kvscope::runtime::CachePressHook;
using kvscope::runtime::GenerationOptions;
using kvscope::runtime::Generator;

const std::vector<int64_t> kPrompt = ByteTokenizer::encode("The key-value cache holds every token");

GenerationOptions tokens(int64_t count) {
    GenerationOptions options;
    options.maxNewTokens = count;
    options.stopAtEos = false;
    return options;
}

kvscope::config::CacheSettings cacheOf(kvscope::config::CacheKind kind) {
    kvscope::config::CacheSettings settings;
    settings.kind = kind;
    return settings;
}

/// The llama preset's logits over `ids` [1, N] written out in plain ATen ops, attention computed per query
/// head over the keys it may see: causal, and for rows past the `prefill` prompt without the slots
/// `masked[layer]` [Hkv, prefill] hides from that KV head (removed, not masked, so no -inf arithmetic).
at::Tensor maskedReferenceLogits(const kvscope::model::LanguageModel& model, const at::Tensor& ids,
                                 int64_t prefill, const std::vector<at::Tensor>& masked) {
    const auto& config = model.architecture().config();
    const auto& weights = model.parameters();
    const int64_t heads = model.architecture().numHeads();
    const int64_t kvHeads = model.architecture().numKvHeads();
    const int64_t dim = model.architecture().headDim();
    const int64_t length = ids.size(1);
    auto norm = [&](const at::Tensor& x, const std::string& name) {
        return weights.get(name) * (x * at::rsqrt(x.pow(2).mean(-1, true) + config.rmsNormEps));
    };
    auto project = [&](const at::Tensor& x, const std::string& name) {
        return at::matmul(x, weights.get(name).t());
    };
    const at::Tensor inverse =
        1.0 /
        at::pow(config.ropeTheta, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim));
    const at::Tensor angles =
        at::arange(length, at::kLong).to(at::kFloat).unsqueeze(1) * inverse.unsqueeze(0);
    const at::Tensor cos = at::cat({angles, angles}, -1).cos();
    const at::Tensor sin = at::cat({angles, angles}, -1).sin();
    auto rope = [&](const at::Tensor& x) { // [heads, N, D]
        return x * cos + at::cat({-x.narrow(-1, dim / 2, dim / 2), x.narrow(-1, 0, dim / 2)}, -1) * sin;
    };
    at::Tensor x = weights.get("model.embed_tokens.weight").index_select(0, ids[0]);
    for (int64_t layer = 0; layer < model.architecture().numLayers(); ++layer) {
        const std::string p = "model.layers." + std::to_string(layer) + ".";
        const at::Tensor h = norm(x, p + "input_layernorm.weight");
        const at::Tensor q =
            rope(project(h, p + "self_attn.q_proj.weight").view({length, heads, dim}).transpose(0, 1));
        const at::Tensor k =
            rope(project(h, p + "self_attn.k_proj.weight").view({length, kvHeads, dim}).transpose(0, 1));
        const at::Tensor v =
            project(h, p + "self_attn.v_proj.weight").view({length, kvHeads, dim}).transpose(0, 1);
        at::Tensor out = at::zeros({length, heads, dim});
        for (int64_t head = 0; head < heads; ++head) {
            const int64_t kvHead = head / (heads / kvHeads);
            for (int64_t row = 0; row < length; ++row) {
                std::vector<int64_t> seen;
                for (int64_t column = 0; column <= row; ++column) {
                    if (row < prefill || column >= prefill || !masked[layer][kvHead][column].item<bool>()) {
                        seen.push_back(column);
                    }
                }
                const at::Tensor index = at::tensor(seen, at::kLong);
                const at::Tensor scores =
                    at::mv(k[kvHead].index_select(0, index), q[head][row]) / std::sqrt(dim);
                out[row][head] = at::mv(v[kvHead].index_select(0, index).t(), at::softmax(scores, 0));
            }
        }
        x = x + project(out.reshape({length, heads * dim}), p + "self_attn.o_proj.weight");
        const at::Tensor g = norm(x, p + "post_attention_layernorm.weight");
        x = x +
            project(at::silu(project(g, p + "mlp.gate_proj.weight")) * project(g, p + "mlp.up_proj.weight"),
                    p + "mlp.down_proj.weight");
    }
    return project(norm(x, "model.norm.weight"), "lm_head.weight").unsqueeze(0);
}

at::Tensor layerKeys(Generator& generator, size_t layer) {
    return generator.cache().selfAttention().layer(layer).asAttention()->keys().clone();
}

TEST(CachePressHookTest, PrefillPressKeepsExactlyTheChosenTokensOfEveryLayer) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);

    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"snapkv", 0.5, {{"window_size", "4"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(1));
    pressed.prefill(kPrompt);

    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t kept = length / 2;
    ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
    for (const auto& decision : hook.decisions()) {
        EXPECT_EQ(decision.step, 0);
        EXPECT_EQ(decision.before, length);
        EXPECT_EQ(decision.after, kept);
        // The compressed cache is the uncompressed one at the kept positions (the prefill's outputs are
        // those of full attention, as with kvpress's hook after the layer's forward pass).
        const at::Tensor positions = decision.keptPositions;
        const at::Tensor expected =
            layerKeys(plain, static_cast<size_t>(decision.layer))
                .gather(2, positions.unsqueeze(-1).expand({-1, -1, -1, model->architecture().headDim()}));
        EXPECT_TRUE(at::equal(layerKeys(pressed, static_cast<size_t>(decision.layer)), expected))
            << decision.layer;
        // The window (the last 4 positions) is always kept; dropped and kept positions partition the prompt.
        const at::Tensor all = at::cat({positions, decision.droppedPositions}, 2);
        EXPECT_TRUE(at::equal(std::get<0>(at::sort(all, -1)), at::arange(length).expand_as(all)));
        for (int64_t position = length - 4; position < length; ++position) {
            EXPECT_TRUE((positions == position).any(-1).all().item<bool>()) << position;
        }
    }
    EXPECT_EQ(pressed.cache().seqLength(), kept);
    EXPECT_EQ(pressed.cache().evictedTokens(0), length - kept);
}

TEST(CachePressHookTest, EveryCompressionIsATraceEvent) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"knorm", 0.25, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    kvscope::trace::RecordingSink sink;
    Generator generator(*model, dynamic, tokens(2), &sink);
    generator.prefill(kPrompt);
    std::vector<kvscope::trace::Event> compressions;
    for (const kvscope::trace::Event& event : sink.events()) {
        if (std::holds_alternative<kvscope::trace::CompressionEvent>(event.payload)) {
            compressions.push_back(event);
        }
    }
    ASSERT_EQ(compressions.size(), hook.decisions().size());
    for (size_t index = 0; index < compressions.size(); ++index) {
        const auto& event = std::get<kvscope::trace::CompressionEvent>(compressions[index].payload);
        const auto& decision = hook.decisions()[index];
        EXPECT_EQ(compressions[index].layer, decision.layer);
        EXPECT_EQ(compressions[index].step, 0);
        EXPECT_EQ(event.lengthBefore, decision.before);
        EXPECT_EQ(event.lengthAfter, decision.after);
        EXPECT_EQ(event.droppedCount, decision.before - decision.after);
        ASSERT_EQ(event.keptRecorded, event.heads * decision.after);
        const at::Tensor kept = decision.keptPositions[0].contiguous();
        EXPECT_EQ(std::vector<int64_t>(event.positions.begin(), event.positions.begin() + event.keptRecorded),
                  std::vector<int64_t>(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel()));
        // Few tokens dropped: every dropped position and its score is recorded.
        EXPECT_EQ(event.positions.size(),
                  static_cast<size_t>(event.keptRecorded + event.heads * event.droppedCount));
        EXPECT_EQ(event.droppedScores.size(), static_cast<size_t>(event.heads * event.droppedCount));
        // 1.3: the kept tokens' scores, and knorm keeps the best: no kept score below a dropped one of its
        // head.
        EXPECT_EQ(event.keptScores.size(), static_cast<size_t>(event.keptRecorded));
        EXPECT_TRUE(event.keptPerHead.empty());
        const kvscope::trace::CompressionLayout layout(event);
        ASSERT_TRUE(layout.consistent());
        for (std::int32_t head = 0; head < layout.heads(); ++head) {
            const auto keptScores = layout.keptScores(head);
            const auto droppedScores = layout.droppedScores(head);
            ASSERT_FALSE(keptScores.empty());
            ASSERT_FALSE(droppedScores.empty());
            EXPECT_GE(*std::min_element(keptScores.begin(), keptScores.end()),
                      *std::max_element(droppedScores.begin(), droppedScores.end()))
                << "layer " << decision.layer << " head " << head;
        }
    }
}

TEST(CachePressHookTest, TheStepsMemoryIsCountedAfterThePress) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"knorm", 0.5, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    kvscope::trace::RecordingSink sink;
    Generator generator(*model, dynamic, tokens(2), &sink);
    generator.prefill(kPrompt);
    kvscope::trace::StepState state;
    for (const kvscope::trace::Event& event : sink.events()) {
        kvscope::trace::StateReducer::apply(state, event);
    }
    const kvscope::cache::Cache& cache = generator.cache().selfAttention();
    ASSERT_EQ(state.layers.size(), cache.size());
    int64_t total = 0;
    for (size_t index = 0; index < cache.size(); ++index) {
        const auto& layer = *cache.layer(index).asAttention();
        const int64_t held = layer.keys().nbytes() + layer.values().nbytes();
        ASSERT_LT(layer.keys().size(2), static_cast<int64_t>(kPrompt.size())) << "layer " << index;
        EXPECT_EQ(state.layers[index].storedTokens, layer.keys().size(2)) << "layer " << index;
        EXPECT_EQ(state.layers[index].bytesDevice, held) << "layer " << index;
        total += held;
    }
    EXPECT_EQ(state.memoryDeviceFullPrecision, total);
}

TEST(CachePressHookTest, AdaKvEventsRecordEachHeadsOwnKeptPositions) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"adakv", 0.5, {{"base", "knorm"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    kvscope::trace::RecordingSink sink;
    Generator generator(*model, dynamic, tokens(2), &sink);
    generator.prefill(kPrompt);
    std::vector<kvscope::trace::CompressionEvent> compressions;
    for (const kvscope::trace::Event& event : sink.events()) {
        if (const auto* compression = std::get_if<kvscope::trace::CompressionEvent>(&event.payload)) {
            compressions.push_back(*compression);
        }
    }
    ASSERT_EQ(compressions.size(), hook.decisions().size());
    bool ragged = false;
    for (size_t index = 0; index < compressions.size(); ++index) {
        const auto& event = compressions[index];
        const auto& decision = hook.decisions()[index];
        EXPECT_EQ(event.lengthBefore, decision.before);
        EXPECT_EQ(event.lengthAfter, decision.before) << "masked, not evicted";
        const kvscope::trace::CompressionLayout layout(event);
        ASSERT_TRUE(layout.consistent());
        ASSERT_EQ(layout.heads(), 2);
        for (std::int32_t head = 0; head < layout.heads(); ++head) {
            const at::Tensor masked = decision.masked[0][head];
            const at::Tensor slots = decision.positions[0][head];
            const auto list = [](const at::Tensor& tensor) {
                const at::Tensor flat = tensor.contiguous();
                return std::vector<int64_t>(flat.data_ptr<int64_t>(),
                                            flat.data_ptr<int64_t>() + flat.numel());
            };
            EXPECT_EQ(layout.keptCount(head), decision.before - masked.sum().item<int64_t>());
            const auto kept = layout.keptPositions(head);
            const auto dropped = layout.droppedPositions(head);
            EXPECT_EQ(std::vector<int64_t>(kept.begin(), kept.end()),
                      list(slots.masked_select(masked.logical_not())));
            EXPECT_EQ(std::vector<int64_t>(dropped.begin(), dropped.end()),
                      list(slots.masked_select(masked)));
            // The base press's scores of those tokens (knorm: -|k|).
            const auto keptScores = layout.keptScores(head);
            const at::Tensor expected =
                decision.scores[0][head].masked_select(masked.logical_not()).contiguous();
            EXPECT_EQ(std::vector<float>(keptScores.begin(), keptScores.end()),
                      std::vector<float>(expected.data_ptr<float>(),
                                         expected.data_ptr<float>() + expected.numel()));
        }
        ragged = ragged || layout.keptCount(0) != layout.keptCount(1);
    }
    EXPECT_TRUE(ragged);
}

TEST(CachePressHookTest, NewTokensContinueFromTheOriginalLength) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"h2o", 0.0, {{"budget", "10"}, {"recent_window", "2"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator generator(*model, dynamic, tokens(4));
    generator.prefill(kPrompt);
    while (!generator.finished()) {
        generator.step();
    }
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const auto& last = hook.decisions().back();
    EXPECT_EQ(last.step, 3);
    EXPECT_EQ(last.after, 10);
    // The newest token was fed at step 3 with position length + 2 (the prefill picked the first token).
    EXPECT_TRUE((last.keptPositions == length + 2).any(-1).all().item<bool>());
    EXPECT_EQ(generator.cache().seqLength() + generator.cache().evictedTokens(0), length + 3);
}

TEST(CachePressHookTest, RatioZeroChangesNothing) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto quantized = cacheOf(kvscope::config::CacheKind::Quantized);
    Generator plain(*model, quantized, tokens(6));
    plain.prefill(kPrompt);
    while (!plain.finished()) {
        plain.step();
    }
    CachePressHook hook(model->architecture(), quantized, 1, PressSettings{"knorm", 0.0, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, quantized, tokens(6));
    pressed.prefill(kPrompt);
    while (!pressed.finished()) {
        pressed.step();
    }
    EXPECT_EQ(pressed.generatedTokens(), plain.generatedTokens());
    EXPECT_TRUE(hook.decisions().empty());
}

TEST(CachePressHookTest, AdaKvMasksEachHeadsPrunedSlotsFromEveryLaterQuery) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const int64_t prefill = static_cast<int64_t>(kPrompt.size());
    std::vector<int64_t> sequence = kPrompt;
    for (const char byte : std::string(" and more")) {
        sequence.push_back(static_cast<unsigned char>(byte));
    }
    const at::Tensor ids = at::tensor(sequence, at::kLong).unsqueeze(0);
    const at::Tensor unmasked = model->forward(ids, nullptr);
    const int64_t kvHeads = model->architecture().numKvHeads();
    const int64_t kept = prefill / 2;
    for (const auto kind : {kvscope::config::CacheKind::Dynamic, kvscope::config::CacheKind::Offloaded,
                            kvscope::config::CacheKind::Quantized}) {
        kvscope::config::CacheSettings settings = cacheOf(kind);
        settings.nbits = 8;
        settings.residualLength = 4;
        SCOPED_TRACE(std::string(kvscope::config::toString(kind)));
        CachePressHook hook(model->architecture(), settings, 1,
                            PressSettings{"adakv", 0.5, {{"base", "knorm"}}});
        const AttachedAttentionObserver attached(*model, &hook);
        auto cache = kvscope::runtime::CacheFactory::create(*model, settings, ids.size(1));
        const at::Tensor logits = kvscope::testing::cachedLogits(*model, *cache, ids, prefill, 1);

        ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
        std::vector<at::Tensor> masks;
        bool ragged = false;
        for (const auto& decision : hook.decisions()) {
            EXPECT_EQ(decision.step, 0);
            EXPECT_EQ(decision.before, prefill);
            EXPECT_EQ(decision.after, prefill);
            const at::Tensor counts = decision.masked[0].sum(-1);
            // AdaKV prunes Hkv * (T - n_kept) slots of the layer, spread unevenly over its heads.
            EXPECT_EQ(counts.sum().item<int64_t>(), kvHeads * (prefill - kept));
            ragged = ragged || counts.min().item<int64_t>() != counts.max().item<int64_t>();
            // The cache keeps every slot and attention masks exactly the decided ones.
            EXPECT_TRUE(at::equal(cache->maskedSlots(decision.layer).cpu(), decision.masked));
            EXPECT_EQ(cache->selfAttention().seqLength(static_cast<size_t>(decision.layer)), ids.size(1));
            masks.push_back(decision.masked[0]);
            if (kind == kvscope::config::CacheKind::Dynamic) {
                // The decision is AdaKV's on the layer's prefill keys (unchanged in the cache).
                kvscope::press::PressInputs inputs;
                inputs.keys = cache->selfAttention()
                                  .layer(static_cast<size_t>(decision.layer))
                                  .asAttention()
                                  ->keys()
                                  .narrow(2, 0, prefill);
                const kvscope::press::AdaKvPress reference(kvscope::press::PressCatalog::scorer("knorm", {}));
                EXPECT_TRUE(at::equal(reference.mask(inputs, 0.5).masked, decision.masked)) << decision.layer;
            }
        }
        EXPECT_TRUE(ragged);
        EXPECT_EQ(cache->evictedTokens(0), 0);
        const double tolerance = kvscope::runtime::CacheFactory::logitTolerance(settings);
        const at::Tensor reference = maskedReferenceLogits(*model, ids, prefill, masks);
        EXPECT_LE(kvscope::testing::maxAbsDifference(logits, reference), tolerance);
        // The prompt's rows attend to everything; the masks change every row after it.
        EXPECT_LE(
            kvscope::testing::maxAbsDifference(logits.narrow(1, 0, prefill), unmasked.narrow(1, 0, prefill)),
            tolerance);
        EXPECT_GT(kvscope::testing::maxAbsDifference(logits.narrow(1, prefill, ids.size(1) - prefill),
                                                     unmasked.narrow(1, prefill, ids.size(1) - prefill)),
                  10 * tolerance);
    }
}

TEST(CachePressHookTest, AdaKvMasksSurviveARewindPastThePrompt) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"adakv", 0.5, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator generator(*model, dynamic, tokens(4));
    generator.prefill(kPrompt);
    while (!generator.finished()) {
        generator.step();
    }
    const std::vector<int64_t> first = generator.generatedTokens();
    generator.rewind(3);
    while (!generator.finished()) {
        generator.step();
    }
    EXPECT_EQ(generator.generatedTokens(), first);
    EXPECT_NE(kvscope::testing::refusal([&] { generator.cache().crop(3); }).find("masking press (adakv)"),
              std::string::npos);
}

TEST(CachePressHookTest, RefusesWhatAPressCannotDoNamingWhy) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto& architecture = model->architecture();
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    using kvscope::testing::refusal;
    EXPECT_NE(
        refusal([&] {
            CachePressHook(architecture, cacheOf(kvscope::config::CacheKind::Static), 1, {"knorm", 0.5, {}});
        }).find("static cache preallocates"),
        std::string::npos);
    EXPECT_NE(refusal([&] {
                  CachePressHook(architecture, dynamic, 1, {"snap", 0.5, {}});
              }).find("allowed: streaming_llm"),
              std::string::npos);
    EXPECT_NE(refusal([&] {
                  CachePressHook(architecture, dynamic, 1, {"knorm", 1.0, {}});
              }).find("[0, 1)"),
              std::string::npos);
    EXPECT_NE(refusal([&] {
                  CachePressHook(architecture, dynamic, 2, {"knorm", 0.5, {}});
              }).find("beams 1"),
              std::string::npos);
    EXPECT_NE(refusal([&] {
                  CachePressHook(architecture, dynamic, 1, {"adakv", 0.5, {{"base", "observed_attention"}}});
              }).find("kvpress's AdaKV refuses"),
              std::string::npos);
}

TEST(CachePressHookTest, SlidingWindowLayersAreLeftAloneWithANotice) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma2"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"knorm", 0.5, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator generator(*model, dynamic, tokens(2));
    generator.prefill(kPrompt);
    ASSERT_EQ(hook.notices().size(), 2u);
    EXPECT_NE(hook.notices()[0].find("layer 0 is a DynamicSlidingWindowLayer"), std::string::npos);
    for (const auto& decision : hook.decisions()) {
        EXPECT_EQ(decision.layer % 2, 1);
    }
}

/// Keeps the last attention pass of one layer, with its weights.
class LastPassOfLayer : public kvscope::model::AttentionObserver {
public:
    explicit LastPassOfLayer(int64_t layer) : m_layer(layer) {}
    bool wantsAttentionWeights(int64_t layer, int64_t) const override { return layer == m_layer; }
    void attentionWeights(int64_t layer, const at::Tensor& chunk, int64_t firstQuery) override {
        if (layer == m_layer) {
            weights = firstQuery == 0 ? chunk : at::cat({weights, chunk}, 2);
        }
    }
    void afterAttention(const kvscope::model::AttentionPass& pass) override {
        if (pass.layer == m_layer) {
            seen = pass;
        }
    }
    kvscope::model::AttentionPass seen;
    /// The last pass's attention weights [B, H, t, KV], assembled from its chunks.
    at::Tensor weights;

private:
    int64_t m_layer;
};

// kvpress rebuilds queries with q_proj then q_norm (get_prerope_query_states) and rotates future positions
// with the model's own rotary_emb: a Qwen3 model with llama3 RoPE scaling must give SnapKV's window the very
// attention the model computed, and ExpectedAttention the frequencies the model rotated with.
TEST(CachePressHookTest, PressQueriesAreTheModelsOwnWithQueryNormAndScaledRope) {
    nlohmann::json document = {{"model_type", "qwen3"},
                               {"hidden_size", 64},
                               {"intermediate_size", 96},
                               {"num_hidden_layers", 2},
                               {"num_attention_heads", 4},
                               {"num_key_value_heads", 2},
                               {"head_dim", 16},
                               {"vocab_size", 259},
                               {"max_position_embeddings", 2048},
                               {"rms_norm_eps", 1e-6},
                               {"rope_theta", 10000.0},
                               {"rope_scaling",
                                {{"rope_type", "llama3"},
                                 {"factor", 8.0},
                                 {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 16}}}};
    auto model = ModelLoader::builtin(kvscope::config::ModelConfig::fromJson(document), 3);
    LastPassOfLayer observer(1);
    {
        const AttachedAttentionObserver attached(*model, &observer);
        model->forward(at::tensor(kPrompt, at::kLong).unsqueeze(0), nullptr);
    }
    ASSERT_TRUE(observer.seen.queryNormWeight.defined()) << "qwen3 norms its queries";

    const kvscope::press::PressInputs inputs = CachePressHook::inputsOf(observer.seen, model->architecture());
    const int64_t window = 6;
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const at::Tensor pressWindow = kvscope::press::SnapKvPress::windowAttention(inputs, window);
    const at::Tensor modelWindow =
        observer.weights.narrow(2, length - window, window).narrow(3, 0, length - window);
    EXPECT_LT(kvscope::testing::maxAbsDifference(pressWindow, modelWindow), 1e-5);

    // Without the norm the window differs: the test sees the norm.
    kvscope::press::PressInputs unnormed = inputs;
    unnormed.queryNormWeight = at::Tensor();
    EXPECT_GT(kvscope::testing::maxAbsDifference(
                  kvscope::press::SnapKvPress::windowAttention(unnormed, window), modelWindow),
              1e-3);

    // The frequencies a press rotates with reproduce the model's rotary rows, scaling included.
    const auto [cos, sin] = kvscope::model::ops::rotary(observer.seen.positions, inputs.inverseFrequencies);
    EXPECT_LT(kvscope::testing::maxAbsDifference(cos.squeeze(1), inputs.cos), 1e-6);
    const at::Tensor plain = kvscope::model::ops::inverseFrequencies(16, 10000.0, std::nullopt, at::kCPU);
    EXPECT_GT(kvscope::testing::maxAbsDifference(plain, inputs.inverseFrequencies), 1e-3)
        << "llama3 scaling changed no frequency";
}

} // namespace

namespace {

/// kvpress scorers beyond the first ten, with options that fit the short test prompt.
struct ScorerRun {
    const char* name;
    std::map<std::string, std::string> options;
};

const ScorerRun kScorerRuns[] = {
    {"keydiff", {}},
    {"lagkv", {{"n_sink", "2"}, {"lag_size", "8"}}},
    {"non_causal_attention", {{"chunk_size", "8"}}},
    {"leverage", {{"sketch_dimension", "4"}}},
    {"cur", {{"local_window_size", "8"}}},
    {"compactor",
     {{"sink_size_start", "2"}, {"sink_size_end", "1"}, {"chunk_size", "8"}, {"sketch_dimension", "4"}}},
    {"cap", {{"n_future_positions", "16"}, {"n_sink", "2"}}},
};

} // namespace

TEST(CachePressHookTest, ExtendedScorersCompressEveryLayerInAGeneration) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t kept = static_cast<int64_t>(static_cast<double>(length) * 0.75);
    for (const ScorerRun& run : kScorerRuns) {
        CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{run.name, 0.25, run.options});
        const AttachedAttentionObserver attached(*model, &hook);
        Generator pressed(*model, dynamic, tokens(2));
        pressed.prefill(kPrompt);
        ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()))
            << run.name;
        for (const auto& decision : hook.decisions()) {
            EXPECT_EQ(decision.after, kept) << run.name;
            ASSERT_TRUE(decision.keptScores.defined()) << run.name;
            // The cache holds the uncompressed keys at the kept positions, and the kept scores are the best.
            const at::Tensor expected = layerKeys(plain, static_cast<size_t>(decision.layer))
                                            .gather(2, decision.keptPositions.unsqueeze(-1).expand(
                                                           {-1, -1, -1, model->architecture().headDim()}));
            EXPECT_TRUE(at::equal(layerKeys(pressed, static_cast<size_t>(decision.layer)), expected))
                << run.name;
            EXPECT_TRUE((decision.keptScores.amin(-1) >= decision.droppedScores.amax(-1)).all().item<bool>())
                << run.name;
        }
    }
}

TEST(CachePressHookTest, ThinkZeroesKeyChannelsAndKeepsEveryToken) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);
    kvscope::trace::RecordingSink sink;
    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"think", 0.25, {{"window_size", "4"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(1), &sink);
    pressed.prefill(kPrompt);

    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t dim = model->architecture().headDim();
    ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
    for (const auto& decision : hook.decisions()) {
        EXPECT_EQ(decision.before, length);
        EXPECT_EQ(decision.after, length);
        ASSERT_TRUE(decision.prunedChannels.defined());
        ASSERT_EQ(decision.prunedChannels.size(2), dim / 4);
        // The pressed keys are the plain ones with exactly those channels zeroed, per head.
        at::Tensor expected = layerKeys(plain, static_cast<size_t>(decision.layer));
        for (int64_t head = 0; head < expected.size(1); ++head) {
            for (int64_t index = 0; index < decision.prunedChannels.size(2); ++index) {
                expected[0][head].select(-1, decision.prunedChannels[0][head][index].item<int64_t>()).zero_();
            }
        }
        EXPECT_TRUE(at::equal(layerKeys(pressed, static_cast<size_t>(decision.layer)), expected))
            << decision.layer;
    }
    EXPECT_EQ(pressed.cache().seqLength(), length);
    EXPECT_EQ(pressed.cache().evictedTokens(0), 0);
    // Each layer's event names the zeroed channels per head and drops nothing.
    int events = 0;
    for (const auto& event : sink.events()) {
        if (const auto* compression = std::get_if<kvscope::trace::CompressionEvent>(&event.payload)) {
            ++events;
            EXPECT_EQ(compression->lengthAfter, compression->lengthBefore);
            EXPECT_EQ(compression->droppedCount, 0);
            const kvscope::trace::CompressionLayout layout(*compression);
            ASSERT_TRUE(layout.consistent());
            EXPECT_EQ(layout.prunedChannelCount(), dim / 4);
            const auto& decision = hook.decisions()[static_cast<size_t>(event.layer)];
            const auto channels = layout.prunedChannels(1);
            for (size_t index = 0; index < channels.size(); ++index) {
                EXPECT_EQ(channels[index],
                          decision.prunedChannels[0][1][static_cast<int64_t>(index)].item<int64_t>());
            }
        }
    }
    EXPECT_EQ(events, model->architecture().numLayers());
}

TEST(CachePressHookTest, SimLayerKvKeepsALazyLayersInitialAndRecentTokens) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    {
        // Threshold 0: every layer's score is positive, so every layer is lazy; it keeps [0, 2) and the
        // last n_recent - n_last = 7 positions (kvpress's slice).
        CachePressHook hook(
            model->architecture(), dynamic, 1,
            PressSettings{"simlayerkv",
                          0.0,
                          {{"lazy_threshold", "0"}, {"n_last", "1"}, {"n_recent", "8"}, {"n_initial", "2"}}});
        const AttachedAttentionObserver attached(*model, &hook);
        Generator pressed(*model, dynamic, tokens(1));
        pressed.prefill(kPrompt);
        ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
        std::vector<int64_t> expected = {0, 1};
        for (int64_t position = length - 7; position < length; ++position) {
            expected.push_back(position);
        }
        for (const auto& decision : hook.decisions()) {
            const at::Tensor kept = decision.keptPositions[0][0].contiguous();
            EXPECT_EQ(std::vector<int64_t>(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel()),
                      expected);
        }
        EXPECT_EQ(pressed.cache().seqLength(), 9);
    }
    {
        // Threshold 1 disables it: no decision, nothing dropped.
        CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"simlayerkv", 0.0, {}});
        const AttachedAttentionObserver attached(*model, &hook);
        Generator pressed(*model, dynamic, tokens(1));
        pressed.prefill(kPrompt);
        EXPECT_TRUE(hook.decisions().empty());
        EXPECT_EQ(pressed.cache().seqLength(), length);
    }
}

namespace {

/// The decisions of `press` over a generation of 6 tokens after kPrompt, the model attending `chunk` query
/// rows at a time (0: all at once).
std::vector<kvscope::runtime::PressDecision> decisionsWithQueryChunk(const PressSettings& press,
                                                                     int64_t chunk) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 4);
    model->setAttentionQueryChunk(chunk);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, press);
    const AttachedAttentionObserver attached(*model, &hook);
    Generator generator(*model, dynamic, tokens(6));
    generator.prefill(kPrompt);
    while (!generator.finished()) {
        generator.step();
    }
    return hook.decisions();
}

/// `keys` [.., D] turned by `delta` [..] positions with plain RoPE of `theta` (written out here, not the
/// engine's: rope(rope(k, p), j - p) = rope(k, j)).
at::Tensor turned(const at::Tensor& keys, const at::Tensor& delta, double theta) {
    const int64_t dim = keys.size(-1);
    const at::Tensor inverse =
        1.0 / at::pow(theta, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim));
    const at::Tensor angles = delta.to(at::kFloat).unsqueeze(-1) * inverse;
    const at::Tensor cos = at::cat({angles, angles}, -1).cos();
    const at::Tensor sin = at::cat({angles, angles}, -1).sin();
    const at::Tensor half = at::cat({-keys.narrow(-1, dim / 2, dim / 2), keys.narrow(-1, 0, dim / 2)}, -1);
    return keys * cos + half * sin;
}

} // namespace

// Presses that read attention weights get them a chunk of query rows at a time: their decisions are those
// of the unchunked prefill, for chunks smaller than, around and as large as the prompt.
TEST(CachePressHookTest, AttentionPressesDecideAlikeWhateverTheQueryChunk) {
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const std::vector<PressSettings> presses = {
        PressSettings{"observed_attention", 0.5, {}},
        PressSettings{"h2o", 0.0, {{"budget", "20"}, {"recent_window", "4"}}}};
    for (const PressSettings& press : presses) {
        const auto expected = decisionsWithQueryChunk(press, 0);
        ASSERT_FALSE(expected.empty()) << press.name;
        for (int64_t chunk : {int64_t{1}, int64_t{7}, length - 1, length, length + 1}) {
            SCOPED_TRACE(press.name + ", chunk " + std::to_string(chunk));
            const auto decisions = decisionsWithQueryChunk(press, chunk);
            ASSERT_EQ(decisions.size(), expected.size());
            for (size_t i = 0; i < decisions.size(); ++i) {
                EXPECT_EQ(decisions[i].step, expected[i].step);
                EXPECT_EQ(decisions[i].layer, expected[i].layer);
                EXPECT_TRUE(at::equal(decisions[i].keptPositions, expected[i].keptPositions)) << i;
                if (expected[i].keptScores.defined()) {
                    EXPECT_LE(
                        kvscope::testing::maxAbsDifference(decisions[i].keptScores, expected[i].keptScores),
                        1e-6);
                }
            }
        }
    }
}

TEST(CachePressHookTest, KeyRerotationKeepsTheBestInPositionOrderRotatedToConsecutivePositions) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);
    kvscope::trace::RecordingSink sink;
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"key_rerotation", 0.5, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(3), &sink);
    pressed.prefill(kPrompt);

    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t kept = length / 2;
    const int64_t dim = model->architecture().headDim();
    ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
    for (const auto& decision : hook.decisions()) {
        ASSERT_EQ(decision.after, kept);
        const at::Tensor positions = decision.keptPositions; // [1, Hkv, kept]
        EXPECT_TRUE(at::equal(positions, std::get<0>(at::sort(positions, -1)))) << "kept in position order";
        // Knorm's choice: the kept keys have smaller norms than the dropped ones.
        EXPECT_TRUE((decision.keptScores.amin(-1) >= decision.droppedScores.amax(-1)).all().item<bool>());
        // Slot j holds the key of position p_j turned to position j.
        const at::Tensor original = layerKeys(plain, static_cast<size_t>(decision.layer))
                                        .gather(2, positions.unsqueeze(-1).expand({-1, -1, -1, dim}));
        const at::Tensor delta = at::arange(kept, at::kLong).expand_as(positions) - positions;
        const at::Tensor expected = turned(original, delta, model->architecture().config().ropeTheta);
        const at::Tensor cached = layerKeys(pressed, static_cast<size_t>(decision.layer));
        EXPECT_TRUE(at::allclose(cached, expected, 1e-5, 1e-5)) << decision.layer;
        EXPECT_FALSE(at::allclose(cached, original, 1e-5, 1e-5)) << "some keys moved";
    }
    EXPECT_EQ(pressed.cache().evictedTokens(0), length - kept);
    // The generation goes on from the re-rotated cache.
    while (!pressed.finished()) {
        pressed.step();
    }
    EXPECT_EQ(pressed.cache().seqLength(), kept + 2);
}

namespace {

/// The kept positions and rotary positions of every compression event `sink` recorded, by layer.
struct RecordedMap {
    std::vector<int64_t> kept;
    std::vector<int64_t> rotary;
};
std::map<int32_t, RecordedMap> recordedMaps(const kvscope::trace::RecordingSink& sink) {
    std::map<int32_t, RecordedMap> maps;
    for (const auto& event : sink.events()) {
        if (const auto* compression = std::get_if<kvscope::trace::CompressionEvent>(&event.payload)) {
            maps[event.layer] = {
                std::vector<int64_t>(compression->positions.begin(),
                                     compression->positions.begin() + compression->keptRecorded),
                compression->rotaryPositions};
        }
    }
    return maps;
}

const std::vector<int64_t> kTenTokens = ByteTokenizer::encode("key rotate", false);

} // namespace

// KeyRerotation over StreamingLLM (2 sinks) keeps a known set, so its position map is known: each layer's
// event and decision carry the kept keys' new positions beside their old ones.
TEST(CachePressHookTest, KeyRerotationEventsCarryTheOldToNewPositionMap) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    ASSERT_EQ(kTenTokens.size(), 10u);
    kvscope::trace::RecordingSink sink;
    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"key_rerotation", 0.5, {{"base", "streaming_llm"}, {"n_sink", "2"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(2), &sink);
    pressed.prefill(kTenTokens);
    while (!pressed.finished()) {
        pressed.step();
    }
    // 5 of 10 kept, per KV head (2): the sinks 0 1 and the last 3, now at 0 1 2 3 4.
    const std::vector<int64_t> kept = {0, 1, 7, 8, 9, 0, 1, 7, 8, 9};
    const std::vector<int64_t> rotary = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    const auto maps = recordedMaps(sink);
    ASSERT_EQ(maps.size(), static_cast<size_t>(model->architecture().numLayers()));
    for (const auto& [layer, map] : maps) {
        EXPECT_EQ(map.kept, kept) << layer;
        EXPECT_EQ(map.rotary, rotary) << layer;
    }
    for (const auto& decision : hook.decisions()) {
        ASSERT_TRUE(decision.rotaryPositions.defined());
        EXPECT_TRUE(at::equal(decision.rotaryPositions.flatten(), at::tensor(rotary, at::kLong)));
    }
    // A press that keeps the keys' rotations records no map.
    kvscope::trace::RecordingSink plainSink;
    CachePressHook streaming(model->architecture(), dynamic, 1,
                             PressSettings{"streaming_llm", 0.5, {{"n_sink", "2"}}});
    const AttachedAttentionObserver streamingAttached(*model, &streaming);
    Generator evicted(*model, dynamic, tokens(1), &plainSink);
    evicted.prefill(kTenTokens);
    for (const auto& [layer, map] : recordedMaps(plainSink)) {
        EXPECT_EQ(map.kept, kept) << layer;
        EXPECT_TRUE(map.rotary.empty()) << layer;
    }
    EXPECT_FALSE(streaming.decisions().front().rotaryPositions.defined());
}

// Composed with KeyRerotation first: the second stage keeps a subset of the re-rotated keys, which keep the
// positions the first stage gave them (0 1 . . 4 of 0 1 7 8 9).
TEST(CachePressHookTest, AComposedStageThatReRotatesCarriesItsMapThroughTheNextStage) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    kvscope::trace::RecordingSink sink;
    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"composed",
                                      0.5,
                                      {{"first", "key_rerotation"},
                                       {"first.base", "streaming_llm"},
                                       {"first.n_sink", "2"},
                                       {"second", "streaming_llm"},
                                       {"second.n_sink", "2"},
                                       {"second_ratio", "0.4"}}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(1), &sink);
    pressed.prefill(kTenTokens);
    const auto maps = recordedMaps(sink);
    ASSERT_EQ(maps.size(), static_cast<size_t>(model->architecture().numLayers()));
    for (const auto& [layer, map] : maps) {
        // Per head, by kept position: 0 1 9 at 0 1 4.
        for (size_t head = 0; head < 2; ++head) {
            std::vector<std::pair<int64_t, int64_t>> moves;
            for (size_t i = head * 3; i < head * 3 + 3; ++i) {
                moves.emplace_back(map.kept.at(i), map.rotary.at(i));
            }
            std::sort(moves.begin(), moves.end());
            EXPECT_EQ(moves, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 1}, {9, 4}})) << layer;
        }
    }
}

// ThinK inside Composed, first or second: the zeroed channels reach the decision and the event, and they are
// the channels the cache holds as zeros.
TEST(CachePressHookTest, ThinkInsideComposedReportsItsChannels) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t dim = model->architecture().headDim();
    // Standalone ThinK's channels: what the composed run's first stage must zero too.
    CachePressHook alone(model->architecture(), dynamic, 1,
                         PressSettings{"think", 0.25, {{"window_size", "4"}}});
    {
        const AttachedAttentionObserver attached(*model, &alone);
        Generator generator(*model, dynamic, tokens(1));
        generator.prefill(kPrompt);
    }
    struct Case {
        PressSettings press;
        int64_t kept;
        int64_t channels;
        bool sameAsAlone;
    };
    const std::vector<Case> cases = {
        {{"composed",
          0.25,
          {{"first", "think"}, {"first.window_size", "4"}, {"second", "knorm"}, {"second_ratio", "0.5"}}},
         length / 2,
         dim / 4,
         true},
        {{"composed",
          0.5,
          {{"first", "knorm"}, {"second", "think"}, {"second.window_size", "4"}, {"second_ratio", "0.5"}}},
         length / 2,
         dim / 2,
         false},
    };
    for (const Case& test : cases) {
        SCOPED_TRACE(test.press.options.at("first") + " then " + test.press.options.at("second"));
        kvscope::trace::RecordingSink sink;
        CachePressHook hook(model->architecture(), dynamic, 1, test.press);
        const AttachedAttentionObserver attached(*model, &hook);
        Generator pressed(*model, dynamic, tokens(1), &sink);
        pressed.prefill(kPrompt);
        ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
        for (const auto& decision : hook.decisions()) {
            EXPECT_EQ(decision.after, test.kept);
            ASSERT_TRUE(decision.prunedChannels.defined());
            ASSERT_EQ(decision.prunedChannels.size(2), test.channels);
            const at::Tensor keys = layerKeys(pressed, static_cast<size_t>(decision.layer))[0]; // [Hkv, n, D]
            for (int64_t head = 0; head < keys.size(0); ++head) {
                const at::Tensor channels = decision.prunedChannels[0][head].to(at::kLong);
                EXPECT_TRUE(keys[head].index_select(-1, channels).eq(0).all().item<bool>())
                    << "zeroed in the cache";
                // The others are not all zero: the list names exactly the zeroed ones.
                at::Tensor others = at::ones({dim}, at::kBool);
                others.index_put_({channels}, false);
                EXPECT_TRUE(
                    keys[head].index_select(-1, others.nonzero().squeeze(1)).ne(0).any(0).all().item<bool>());
            }
            if (test.sameAsAlone) {
                EXPECT_TRUE(at::equal(decision.prunedChannels,
                                      alone.decisions()[static_cast<size_t>(decision.layer)].prunedChannels));
            }
        }
        int events = 0;
        for (const auto& event : sink.events()) {
            if (const auto* compression = std::get_if<kvscope::trace::CompressionEvent>(&event.payload)) {
                ++events;
                EXPECT_LT(compression->lengthAfter, compression->lengthBefore) << "tokens were evicted too";
                const kvscope::trace::CompressionLayout layout(*compression);
                ASSERT_TRUE(layout.consistent());
                EXPECT_EQ(layout.prunedChannelCount(), test.channels);
                const at::Tensor expected = hook.decisions()[static_cast<size_t>(event.layer)]
                                                .prunedChannels[0]
                                                .flatten()
                                                .to(at::kInt)
                                                .contiguous();
                EXPECT_EQ(compression->prunedChannels,
                          std::vector<int32_t>(expected.data_ptr<int32_t>(),
                                               expected.data_ptr<int32_t>() + expected.numel()));
            }
        }
        EXPECT_EQ(events, model->architecture().numLayers());
    }
}

TEST(CachePressHookTest, CriticalKvWeighsTheBaseScoresByTheValuesThroughOProj) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"criticalkv", 0.5, {}});
    const AttachedAttentionObserver attached(*model, &hook);
    Generator pressed(*model, dynamic, tokens(1));
    pressed.prefill(kPrompt);

    const auto& architecture = model->architecture();
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const int64_t kept = length / 2;
    const int64_t heads = architecture.numHeads();
    const int64_t kvHeads = architecture.numKvHeads();
    const int64_t dim = architecture.headDim();
    ASSERT_EQ(hook.decisions().size(), static_cast<size_t>(architecture.numLayers()));
    for (const auto& decision : hook.decisions()) {
        const size_t layer = static_cast<size_t>(decision.layer);
        ASSERT_EQ(decision.after, kept);
        // FORMAT.md's CriticalKV over Knorm (epsilon 1e-4, first_stage_ratio 0.5), written out per head.
        const at::Tensor keys = layerKeys(plain, layer)[0];
        const at::Tensor values = plain.cache().selfAttention().layer(layer).asAttention()->values()[0];
        const at::Tensor output = model->parameters().get("model.layers." + std::to_string(layer) +
                                                          ".self_attn.o_proj.weight"); // [hidden, H D]
        const int64_t firstStage = static_cast<int64_t>((1.0 - 0.5) * static_cast<double>(length) * 0.5);
        for (int64_t kvHead = 0; kvHead < kvHeads; ++kvHead) {
            // In double: float32's summation order may only swap tokens whose scores tie within 1e-5.
            const at::Tensor base = -keys[kvHead].to(at::kDouble).norm(2, -1); // Knorm
            at::Tensor norms = at::zeros({length}, at::kDouble);
            for (int64_t head = kvHead * (heads / kvHeads); head < (kvHead + 1) * (heads / kvHeads); ++head) {
                norms += at::matmul(values[kvHead].to(at::kDouble),
                                    output.narrow(1, head * dim, dim).t().to(at::kDouble))
                             .abs()
                             .sum(-1);
            }
            norms /= static_cast<double>(heads / kvHeads);
            const at::Tensor scores = (base + 1e-4) * norms;
            const at::Tensor forced = std::get<1>(base.topk(firstStage));
            const at::Tensor ours = decision.keptPositions[0][kvHead];
            at::Tensor keptMask = at::zeros({length}, at::kBool);
            keptMask.index_put_({ours}, true);
            EXPECT_TRUE(keptMask.index_select(0, forced).all().item<bool>())
                << "the base's best " << firstStage << " are forced in; layer " << decision.layer;
            // Among the others, every kept token outscores every dropped one.
            at::Tensor free = keptMask.clone();
            free.index_put_({forced}, false);
            const double keptWorst = scores.masked_select(free).min().item<double>();
            const double droppedBest = scores.masked_select(keptMask.logical_not()).max().item<double>();
            EXPECT_GE(keptWorst, droppedBest - 1e-5 * std::abs(droppedBest))
                << "layer " << decision.layer << " head " << kvHead;
        }
    }
}

// Every registration runs in a generation with the inspector's prompt-fitted defaults: the prefill presses
// decide on every layer (masking ones mask, the others evict or rewrite keys), and the decoding ones decode.
TEST(CachePressHookTest, EveryRegisteredPressRunsInAGeneration) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    for (const auto& description : kvscope::config::PressDescriptions::all()) {
        SCOPED_TRACE(description.name);
        PressSettings settings{description.name, description.phase == "prefill" ? 0.5 : 0.0, {}};
        if (description.name == "simlayerkv") {
            settings.options = {{"lazy_threshold", "0"}, {"n_recent", "8"}};
        } else if (description.name == "h2o") {
            settings.options = {{"budget", std::to_string(length - 4)}};
        } else if (description.phase == "decoding") {
            settings.options = {{"compression_interval", "2"}};
            if (description.name != "compression_ratio_decoding") {
                settings.options["target_size"] = std::to_string(length - 4);
            }
        }
        kvscope::config::PressDescriptions::fitToPrompt(settings, length);
        CachePressHook hook(model->architecture(), dynamic, 1, settings);
        const AttachedAttentionObserver attached(*model, &hook);
        Generator pressed(*model, dynamic, tokens(4));
        ASSERT_NO_THROW({
            pressed.prefill(kPrompt);
            while (!pressed.finished()) {
                pressed.step();
            }
        });
        EXPECT_GE(hook.decisions().size(), static_cast<size_t>(model->architecture().numLayers()));
        for (const auto& decision : hook.decisions()) {
            if (description.policy.savesMemory() && description.name != "simlayerkv" &&
                description.name != "think") {
                EXPECT_LT(decision.after, decision.before) << decision.layer << " at step " << decision.step;
            }
        }
    }
}
