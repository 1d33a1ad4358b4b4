// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressSavings.h"

#include "kvscope/trace/StateReducer.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

/// Two layers holding `stored` tokens each at 512 bytes a token (2 KV heads x 16 dims x 2 x 4 bytes), last
/// updated at step 1.
trace::StepState stateHolding(std::int64_t stored) {
    trace::StepState state;
    state.layers.resize(2);
    for (trace::LayerState& layer : state.layers) {
        layer.storedTokens = stored;
        layer.bytesDevice = stored * 512;
        layer.lastUpdateStep = 1;
    }
    return state;
}

PressHistory::Compression compressionInPressSavings(std::int64_t step, std::int32_t layer, trace::CompressionEvent event) {
    return {step, layer, std::move(event)};
}

// Each kind of decision over 10 prompt tokens of 2 layers: what it saved, in tokens and bytes.
TEST(PressSavingsTest, EvictionsSaveTheirTokensBytesMasksAndRewrittenKeysNothing) {
    // SnapKV: 6 of 10 kept per head in both layers; the layers hold 7 at step 1.
    const trace::CompressionEvent evicted{10, 6, 2, 4, 12, {}, {}, {}, {}};
    // AdaKV: heads keep 7 and 5, the cache keeps its 10.
    const trace::CompressionEvent masked{10, 10, 2, 8, 0, {}, {}, {}, {7, 5}};
    // ThinK: every token stays, 4 channels per head zeroed.
    trace::CompressionEvent zeroed{10, 10, 2, 0, 0, {}, {}, {}, {}};
    zeroed.prunedChannels = {0, 3, 5, 9, 1, 2, 4, 8};
    // KeyRerotation: an eviction whose kept keys moved.
    trace::CompressionEvent rerotated = evicted;
    rerotated.rotaryPositions = {0, 1, 2};
    // Composed: ThinK, then an eviction.
    trace::CompressionEvent composed = evicted;
    composed.prunedChannels = zeroed.prunedChannels;

    struct Case {
        const char* press;
        trace::CompressionEvent event;
        std::int64_t stored;
        PressSavings::Figures figures;
        const char* note;
    };
    const std::vector<Case> cases = {
        {"SnapKV",
         evicted,
         7,
         {2, 8, 2, 4096.0, false, false, false},
         "SnapKV evicted 8 token slots per KV head in 2 layers: 4.0 KiB saved"},
        {"AdaKV",
         masked,
         11,
         {2, 0, 0, 0.0, true, false, false},
         "AdaKV masks slots per head: the cache keeps every token, this press saves no memory (0 B saved)"},
        {"CriticalAdaKV",
         masked,
         11,
         {2, 0, 0, 0.0, true, false, false},
         "CriticalAdaKV masks slots per head: the cache keeps every token, this press saves no memory (0 B "
         "saved)"},
        {"ThinK",
         zeroed,
         11,
         {2, 0, 0, 0.0, false, true, false},
         "ThinK rewrites keys in place: every token and byte stays, this press saves no memory (0 B saved)"},
        {"KeyRerotation",
         rerotated,
         7,
         {2, 8, 2, 4096.0, false, false, true},
         "KeyRerotation evicted 8 token slots per KV head in 2 layers: 4.0 KiB saved"},
        {"Composed",
         composed,
         7,
         {2, 8, 2, 4096.0, false, true, false},
         "Composed evicted 8 token slots per KV head in 2 layers: 4.0 KiB saved; its zeroed key channels "
         "save nothing"},
    };
    for (const Case& test : cases) {
        const std::vector<PressHistory::Compression> compressions = {compressionInPressSavings(0, 0, test.event),
                                                                     compressionInPressSavings(0, 1, test.event)};
        const PressSavings::Figures figures = PressSavings::of(compressions, stateHolding(test.stored), 1);
        EXPECT_EQ(figures, test.figures) << test.press;
        EXPECT_EQ(PressSavings::note(QString::fromUtf8(test.press), figures), QString::fromUtf8(test.note))
            << test.press;
    }
}

// At the prefill's own step the layers' bytes follow the eviction, whether the file has the engine's Memory
// event after it or, written before the engine sent one, the reducer's estimate: the saving is the same 4
// tokens x 512 bytes per layer, and the chart shows the 6 kept tokens' bytes.
TEST(PressSavingsTest, AtThePrefillsStepTheBytesAreThoseAfterTheEviction) {
    const trace::CompressionEvent evicted{10, 6, 2, 4, 12, {}, {}, {}, {}};
    const std::vector<PressHistory::Compression> compressions = {compressionInPressSavings(0, 0, evicted),
                                                                 compressionInPressSavings(0, 1, evicted)};
    for (const bool memoryFollows : {false, true}) {
        std::vector<trace::Event> events;
        for (std::int32_t layer = 0; layer < 2; ++layer) {
            events.push_back(
                {0, layer, 0, trace::UpdateEvent{10, 10, 10, -1, 10, 10 * 512, trace::LayerKind::Dynamic}});
            events.push_back({0, layer, 0, evicted});
            if (memoryFollows) {
                events.push_back({0, layer, 0, trace::MemoryEvent{6 * 512, 0, 0}});
            }
        }
        trace::StepState prefill;
        for (const trace::Event& event : events) {
            trace::StateReducer::apply(prefill, event);
        }
        for (const trace::LayerState& layer : prefill.layers) {
            EXPECT_EQ(layer.storedTokens, 6);
            EXPECT_EQ(layer.bytesDevice, 6 * 512) << "memory follows: " << memoryFollows;
        }
        EXPECT_DOUBLE_EQ(PressSavings::of(compressions, prefill, 0).bytes, 4096.0) << memoryFollows;
    }
    EXPECT_DOUBLE_EQ(PressSavings::of(compressions, stateHolding(7), 1).bytes, 4096.0);
}

TEST(PressSavingsTest, OnlyDecisionsUpToTheStepCount) {
    const trace::CompressionEvent evicted{10, 6, 2, 4, 12, {}, {}, {}, {}};
    const std::vector<PressHistory::Compression> compressions = {compressionInPressSavings(0, 0, evicted),
                                                                 compressionInPressSavings(5, 1, evicted)};
    const PressSavings::Figures early = PressSavings::of(compressions, stateHolding(7), 4);
    EXPECT_EQ(early.decisions, 1);
    EXPECT_EQ(early.evictedSlots, 4);
    EXPECT_EQ(early.layers, 1);
    EXPECT_DOUBLE_EQ(early.bytes, 2048.0);
    // Before any decision there is nothing to say.
    EXPECT_TRUE(PressSavings::note("SnapKV", PressSavings::of({}, stateHolding(7), 4)).isEmpty());
}

} // namespace
} // namespace kvscope::gui
