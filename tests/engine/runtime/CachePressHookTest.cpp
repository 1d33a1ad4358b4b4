// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/CachePressHook.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/model/AttentionObserver.h"
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/SnapKvPress.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/RecordingSink.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::model::ByteTokenizer;
using kvscope::model::ModelLoader;
using kvscope::runtime::CachePressHook;
using kvscope::runtime::GenerationOptions;
using kvscope::runtime::Generator;
using kvscope::config::PressSettings;

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

/// Detaches the hook from the model when the test ends.
struct Attached {
    Attached(kvscope::model::LanguageModel& model, CachePressHook& hook) : model(model) {
        model.setAttentionObserver(&hook);
    }
    ~Attached() { model.setAttentionObserver(nullptr); }
    kvscope::model::LanguageModel& model;
};

at::Tensor layerKeys(Generator& generator, size_t layer) {
    return generator.cache().selfAttention().layer(layer).asAttention()->keys().clone();
}

TEST(CachePressHookTest, PrefillPressKeepsExactlyTheChosenTokensOfEveryLayer) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    Generator plain(*model, dynamic, tokens(1));
    plain.prefill(kPrompt);

    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"snapkv", 0.5, {{"window_size", "4"}}});
    Attached attached(*model, hook);
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
        const at::Tensor expected = layerKeys(plain, static_cast<size_t>(decision.layer))
                                        .gather(2, positions.unsqueeze(-1).expand({-1, -1, -1, model->architecture().headDim()}));
        EXPECT_TRUE(at::equal(layerKeys(pressed, static_cast<size_t>(decision.layer)), expected)) << decision.layer;
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
    Attached attached(*model, hook);
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
        EXPECT_EQ(event.positions.size(), static_cast<size_t>(event.keptRecorded + event.heads * event.droppedCount));
        EXPECT_EQ(event.droppedScores.size(), static_cast<size_t>(event.heads * event.droppedCount));
        // 1.3: the kept tokens' scores, and knorm keeps the best: no kept score below a dropped one of its head.
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

TEST(CachePressHookTest, NewTokensContinueFromTheOriginalLength) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1,
                        PressSettings{"h2o", 0.0, {{"budget", "10"}, {"recent_window", "2"}}});
    Attached attached(*model, hook);
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
    Attached attached(*model, hook);
    Generator pressed(*model, quantized, tokens(6));
    pressed.prefill(kPrompt);
    while (!pressed.finished()) {
        pressed.step();
    }
    EXPECT_EQ(pressed.generatedTokens(), plain.generatedTokens());
    EXPECT_TRUE(hook.decisions().empty());
}

TEST(CachePressHookTest, RefusesWhatAPressCannotDoNamingWhy) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const auto& architecture = model->architecture();
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    using kvscope::testing::refusal;
    EXPECT_NE(refusal([&] { CachePressHook(architecture, cacheOf(kvscope::config::CacheKind::Static), 1, {"knorm", 0.5, {}}); })
                  .find("static cache preallocates"),
              std::string::npos);
    EXPECT_NE(refusal([&] { CachePressHook(architecture, dynamic, 1, {"snap", 0.5, {}}); }).find("allowed: streaming_llm"),
              std::string::npos);
    EXPECT_NE(refusal([&] { CachePressHook(architecture, dynamic, 1, {"knorm", 1.0, {}}); }).find("[0, 1)"),
              std::string::npos);
    EXPECT_NE(refusal([&] { CachePressHook(architecture, dynamic, 2, {"knorm", 0.5, {}}); }).find("beams 1"),
              std::string::npos);
}

TEST(CachePressHookTest, SlidingWindowLayersAreLeftAloneWithANotice) {
    auto model = ModelLoader::builtin(kvscope::testing::presetConfig("gemma2"), 1);
    const auto dynamic = cacheOf(kvscope::config::CacheKind::Dynamic);
    CachePressHook hook(model->architecture(), dynamic, 1, PressSettings{"knorm", 0.5, {}});
    Attached attached(*model, hook);
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
    void afterAttention(const kvscope::model::AttentionPass& pass) override {
        if (pass.layer == m_layer) {
            seen = pass;
        }
    }
    kvscope::model::AttentionPass seen;

private:
    int64_t m_layer;
};

// kvpress rebuilds queries with q_proj then q_norm (get_prerope_query_states) and rotates future positions
// with the model's own rotary_emb: a Qwen3 model with llama3 RoPE scaling must give SnapKV's window the very
// attention the model computed, and ExpectedAttention the frequencies the model rotated with.
TEST(CachePressHookTest, PressQueriesAreTheModelsOwnWithQueryNormAndScaledRope) {
    nlohmann::json document = {
        {"model_type", "qwen3"}, {"hidden_size", 64}, {"intermediate_size", 96}, {"num_hidden_layers", 2},
        {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16}, {"vocab_size", 259},
        {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
        {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}}}};
    auto model = ModelLoader::builtin(kvscope::config::ModelConfig::fromJson(document), 3);
    LastPassOfLayer observer(1);
    model->setAttentionObserver(&observer);
    model->forward(at::tensor(kPrompt, at::kLong).unsqueeze(0), nullptr);
    model->setAttentionObserver(nullptr);
    ASSERT_TRUE(observer.seen.queryNormWeight.defined()) << "qwen3 norms its queries";

    const kvscope::press::PressInputs inputs = CachePressHook::inputsOf(observer.seen, model->architecture());
    const int64_t window = 6;
    const int64_t length = static_cast<int64_t>(kPrompt.size());
    const at::Tensor pressWindow = kvscope::press::SnapKvPress::windowAttention(inputs, window);
    const at::Tensor modelWindow = observer.seen.attentionWeights.narrow(2, length - window, window).narrow(3, 0, length - window);
    EXPECT_LT(kvscope::testing::maxAbsDifference(pressWindow, modelWindow), 1e-5);

    // Without the norm the window differs: the test sees the norm.
    kvscope::press::PressInputs unnormed = inputs;
    unnormed.queryNormWeight = at::Tensor();
    EXPECT_GT(kvscope::testing::maxAbsDifference(kvscope::press::SnapKvPress::windowAttention(unnormed, window), modelWindow), 1e-3);

    // The frequencies a press rotates with reproduce the model's rotary rows, scaling included.
    const auto [cos, sin] = kvscope::model::ops::rotary(observer.seen.positions, inputs.inverseFrequencies);
    EXPECT_LT(kvscope::testing::maxAbsDifference(cos.squeeze(1), inputs.cos), 1e-6);
    const at::Tensor plain = kvscope::model::ops::inverseFrequencies(16, 10000.0, std::nullopt, at::kCPU);
    EXPECT_GT(kvscope::testing::maxAbsDifference(plain, inputs.inverseFrequencies), 1e-3) << "llama3 scaling changed no frequency";
}

} // namespace
