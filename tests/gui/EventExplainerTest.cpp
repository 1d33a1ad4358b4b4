// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/EventExplainer.h"

#include "GoldenFile.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

/// One event of every kind, as the explainers' tests give them.
std::vector<trace::EventPayload> explainerEveryKindPayloads() {
    return {
        trace::UpdateEvent{1, 10, 10, -1, 10, 4096},
        trace::MaskSizesEvent{1, 10, 0},
        trace::WindowSlideEvent{1, 5, 13, 8},
        trace::QuantizeFlushEvent{8, 9, 1, 8, 4096, 1024, 0.1, 0.01, 0.02},
        trace::TransferEvent{trace::TransferDirection::Offload},
        trace::TransferEvent{trace::TransferDirection::Prefetch, trace::TransferLane::Prefetch},
        trace::CropEvent{4, 10, 4},
        trace::ReorderEvent{{1, 0}},
        trace::BatchRepeatEvent{2, 1, 2},
        trace::BatchSelectEvent{{0}, 2, 1},
        trace::ResetEvent{},
        trace::MemoryEvent{1, 2, 3},
        trace::StepBeginEvent{65, "A"},
        trace::StepEndEvent{66, "B", 1000},
        trace::ComputeEvent{},
        trace::LogitsEvent{{1}, {-0.1f}, false},
        trace::CompressionEvent{10, 6, 2, 4, 12, {}, {}, {}, {}},
        trace::PagedPoolEvent{4, 10, -1, true, 0, {0}, 64, 8},
        trace::RequestArrivedEvent{"r0", 15, 4},
        trace::RequestAdmittedEvent{"r0", 15, 0, false},
        trace::RequestScheduledEvent{"r0", 0, 15, true},
        trace::RequestPreemptedEvent{"r0", 16},
        trace::RequestFinishedEvent{"r0", trace::FinishReason::MaxTokens, 4},
        trace::BlockAllocatedEvent{"r0", 0, 3, 3},
        trace::BlockTouchedEvent{"r1", 0, 0, 0, 2},
        trace::BlockCachedEvent{"r0", 0, 2, 0x1234, 0x5678, 8, 12},
        trace::BlockFreedEvent{"r0", 0, 4, 4, 0, 9, false},
        trace::BlockEvictedEvent{0, 3, 0x1234},
        trace::RequestTokensEvent{"r0", 15, {5015}, " keeps", {6}},
        trace::ChannelErrorEvent{1, 3, {0.1F, 0.2F}, {1.0F, 4.0F}, {0.1F}, {1.0F}},
        trace::SpeculationEvent{trace::DraftSource::PromptLookup, 12, {7, 8}, "ab", {1, 2}, 1, {11}, {13}},
        trace::ServerCacheEvent{trace::ServerCacheChange::Stored, true, 0, {7}, 6, {1, 2}, 2, "GPU", "ab", {1, 2}},
        trace::ServerStatusEvent{4, 1.0, true, 5, 0, 0, 10, 4},
    };
}

TEST(EventExplainerTest, EveryKindHasASummaryAndAReason) {
    trace::StepState state;
    state.layers.resize(2);
    const std::vector<trace::EventPayload> payloads = explainerEveryKindPayloads();
    ASSERT_EQ(payloads.size(), trace::kEventKindCount + 1);
    for (const trace::EventPayload& payload : payloads) {
        const trace::Event event{3, 1, 7, payload};
        EXPECT_FALSE(EventExplainer::summary(event).isEmpty()) << int(event.kind());
        EXPECT_FALSE(EventExplainer::why(event, state).isEmpty()) << int(event.kind());
    }
}

TEST(EventExplainerTest, SpeculationsSayWhatWasDraftedKeptAndRolledBack) {
    // Layer 1 slides: a rejected draft's sentence says it took its window's past back.
    trace::StepState state;
    state.layers.resize(2);
    for (trace::LayerState& layer : state.layers) {
        layer.initialized = true;
    }
    state.layers[1].kind = trace::LayerKind::DynamicSlidingWindow;
    using trace::DraftSource;
    const struct {
        trace::SpeculationEvent event;
        const char* summary;
        const char* why;
    } cases[] = {
        {{DraftSource::PromptLookup, 12, {7, 8, 9}, " a b c", {2, 4, 6}, 1, {11, 11}, {13, 13}},
         "prompt_lookup drafted 3 at positions 12–14, accepted 1, rolled back 2; seq 11 → 13",
         "Prompt lookup (the text's last words found earlier in it) drafted 3 token(s) (' a', ' b', ' c'), which the "
         "step wrote into every layer at positions 12–14 and verified in one forward pass. The model agreed with the "
         "first 1; the other 2 (' b', ' c') were cropped from every layer, positions 13–14 rolled back, and the "
         "model's own token takes position 13 instead. Sliding-window layer(s) 1 had let older tokens leave their "
         "window for the drafts; they kept them aside until this verification and took them back with the crop."},
        {{DraftSource::AssistantModel, 20, {5, 6}, "xy", {1, 2}, 2, {19, 19}, {22, 22}},
         "assistant_model drafted 2 at positions 20–21, accepted 2, rolled back 0; seq 19 → 22",
         "The assistant model drafted 2 token(s) ('x', 'y'), which the step wrote into every layer at positions "
         "20–21 and verified in one forward pass. The model agreed with every draft: nothing was rolled back, and its "
         "own next token follows them."},
        {{DraftSource::PromptLookup, 9, {}, "", {}, 0, {}, {}},
         "prompt_lookup drafted 0 at no position, accepted 0, rolled back 0",
         "Prompt lookup (the text's last words found earlier in it) found no draft this step, so the model verified "
         "nothing and added its own next token only, as plain decoding does."},
    };
    for (const auto& c : cases) {
        const trace::Event event{4, -1, 0, c.event};
        EXPECT_EQ(EventExplainer::summary(event).toStdString(), c.summary);
        EXPECT_EQ(EventExplainer::why(event, state).toStdString(), c.why);
    }
}

TEST(EventExplainerTest, CompressionsSayWhatThePressKept) {
    const trace::Event uniform{0, 1, 0, trace::CompressionEvent{10, 6, 2, 4, 0, {}, {}, {}, {}}};
    EXPECT_EQ(EventExplainer::summary(uniform), "press kept 6 of 10 tokens per head (2 heads)");
    const trace::Event ragged{0, 1, 0, trace::CompressionEvent{4, 4, 2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {}, {}, {3, 1}}};
    EXPECT_EQ(EventExplainer::summary(ragged), "press kept 1 to 3 of 4 tokens per head (2 heads)");
    const QString why = EventExplainer::why(uniform, trace::StepState{}, {}, config::PressSettings{"knorm", 0.4, {}});
    EXPECT_TRUE(why.startsWith("Knorm kept 6 of 10 prompt tokens in layer 1")) << why.toStdString();
}

// The press leaves sliding-window layers alone, and a compression's reason says which they are.
TEST(EventExplainerTest, CompressionsNameTheSlidingLayersThePressLeftAlone) {
    trace::StepState state;
    state.layers.resize(4);
    for (std::size_t layer = 0; layer < state.layers.size(); ++layer) {
        state.layers[layer].initialized = true;
        state.layers[layer].kind = layer % 2 == 0 ? trace::LayerKind::DynamicSlidingWindow : trace::LayerKind::Dynamic;
    }
    const trace::Event compression{0, 1, 0, trace::CompressionEvent{10, 6, 2, 4, 0, {}, {}, {}, {}}};
    const config::PressSettings snapkv{"snapkv", 0.4, {}};
    const QString why = EventExplainer::why(compression, state, {}, snapkv);
    EXPECT_TRUE(why.contains("leaves sliding-window layers 0, 2 alone")) << why.toStdString();
    state.layers[2].kind = trace::LayerKind::Dynamic;
    EXPECT_TRUE(EventExplainer::why(compression, state, {}, snapkv).contains("sliding-window layer 0 alone: its window"));
    state.layers[0].kind = trace::LayerKind::Dynamic;
    EXPECT_FALSE(EventExplainer::why(compression, state, {}, snapkv).contains("alone"));
}

TEST(EventExplainerTest, ReasonsNameTheCause) {
    trace::StepState state;
    const trace::Event slide{12, 3, 0, trace::WindowSlideEvent{1, 5, 13, 8}};
    const QString why = EventExplainer::why(slide, state);
    EXPECT_TRUE(why.contains("Layer 3")) << why.toStdString();
    EXPECT_TRUE(why.contains("last 8 tokens")) << why.toStdString();
    EXPECT_TRUE(why.contains("position 5")) << why.toStdString();
    const trace::Event flush{12, 1, 0, trace::QuantizeFlushEvent{8, 9, 1, 8, 4096, 1024, 0.1, 0.01, 0.0234}};
    const QString flushWhy = EventExplainer::why(flush, state);
    EXPECT_TRUE(flushWhy.contains("residual had grown to 9 tokens")) << flushWhy.toStdString();
    EXPECT_TRUE(flushWhy.contains("2.34%")) << flushWhy.toStdString();
}

TEST(EventExplainerTest, LlamaCppLayersQuantiseAsTheyStoreAndReportTheirWorstChannel) {
    trace::StepState state;
    state.layers.resize(2);
    state.layers[1].kind = trace::LayerKind::Dynamic; // llama.cpp's layers trace as dynamic ones
    const trace::Event flush{12, 1, 0, trace::QuantizeFlushEvent{1, 1, 0, 13, 4096, 4260, 0.1, 0.01, 0.0234}};
    EXPECT_EQ(EventExplainer::why(flush, state).toStdString(),
              "Layer 1 quantised the 1 new tokens as it stored them, as llama.cpp's cache does (no full-precision "
              "residual): 4.0 KiB → 4.2 KiB, at a relative error of 2.34%.");
    state.layers[1].kind = trace::LayerKind::Quantized;
    EXPECT_TRUE(EventExplainer::why(flush, state).contains("residual had grown to 1 tokens"));
    // Two heads of two channels: head 1's channel 0 errs most, its keys 1.5x the head's median (of 6 and 2: 4).
    const trace::Event report{12, 1, 0,
                              trace::ChannelErrorEvent{2, 40, {0.1F, 0.1F, 0.4F, 0.2F}, {1.0F, 1.0F, 6.0F, 2.0F},
                                                       {0.05F, 0.05F}, {1.0F, 1.0F}}};
    EXPECT_EQ(EventExplainer::summary(report).toStdString(), "channel error over 40 tokens: keys 0.235, values 0.05 (RMS)");
    EXPECT_EQ(EventExplainer::why(report, state).toStdString(),
              "Layer 1 has quantised 40 tokens so far; over them its keys' error is 0.235 and its values' 0.05 (root "
              "mean square over every channel). The worst key channel is head 1's channel 0 (error 0.4), whose keys "
              "are 1.5× the head's median channel: a block of 32 values shares one scale, so a large channel coarsens "
              "its whole block unless the rotation spreads it over the head. The Channel errors dock maps every "
              "layer's channels.");
}

// A session's text: "The key-value cache holds" as pieces, position by position.
EventExplainer::TokenLookup sentence() {
    static const std::vector<std::string> pieces = {"<bos>", "The", " key", "-value", " cache", " holds", "\n"};
    return [](std::int64_t position) -> std::optional<std::string> {
        if (position < 0 || position >= static_cast<std::int64_t>(pieces.size())) {
            return std::nullopt;
        }
        return pieces[static_cast<std::size_t>(position)];
    };
}

TEST(EventExplainerTest, QuotesTheTokensAnEventConcerns) {
    const trace::StepState state;
    // Positions 1..4 left a window that now starts at 5 (evicted 1: position 4).
    const trace::Event slide{12, 3, 4, trace::WindowSlideEvent{1, 5, 7, 2}};
    const QString slid = EventExplainer::why(slide, state, sentence());
    EXPECT_TRUE(slid.contains("the window slid past ' cache'")) << slid.toStdString();
    const trace::Event slideTwo{12, 3, 4, trace::WindowSlideEvent{2, 5, 7, 2}};
    EXPECT_TRUE(EventExplainer::why(slideTwo, state, sentence()).contains("slid past '-value', ' cache'"));

    // A crop from 7 to 3 tokens cut positions 3..6: four tokens, named by the first and the last.
    const trace::Event crop{9, 0, 4, trace::CropEvent{3, 7, 3}};
    const QString cropped = EventExplainer::why(crop, state, sentence());
    EXPECT_TRUE(cropped.contains("tail tokens ('-value' … '\\n')")) << cropped.toStdString();
    EXPECT_TRUE(cropped.contains("resumes from position 3")) << cropped.toStdString();

    // A flush that moved 3 tokens into a store of 4: positions 1..3.
    const trace::Event flush{8, 1, 4, trace::QuantizeFlushEvent{3, 3, 0, 4, 4096, 1024, 0.1, 0.01, 0.02}};
    const QString flushed = EventExplainer::why(flush, state, sentence());
    EXPECT_TRUE(flushed.contains("quantized ('The', ' key', '-value') into")) << flushed.toStdString();
    EXPECT_TRUE(flushed.contains("2.00%")) << flushed.toStdString();

    // A decoding update names the token it stored (seq 6: position 5).
    const trace::Event update{14, 0, 5, trace::UpdateEvent{1, 6, 6, -1, 6, 4096}};
    const QString stored = EventExplainer::why(update, state, sentence());
    EXPECT_TRUE(stored.contains("key and value (' holds')")) << stored.toStdString();

    // Unknown tokens (past the session's text, or no text at all) leave the sentence as it was.
    const trace::Event beyond{20, 3, 4, trace::WindowSlideEvent{1, 40, 42, 2}};
    EXPECT_FALSE(EventExplainer::why(beyond, state, sentence()).contains("slid past"));
    EXPECT_EQ(EventExplainer::why(slide, state), EventExplainer::why(slide, state, {}));
    EXPECT_FALSE(EventExplainer::why(slide, state).contains("'"));
}

TEST(EventExplainerTest, TokenTextIsNeverTakenForAPlaceholder) {
    // A piece that looks like a placeholder stays as it is, whatever comes after it in the sentence.
    const EventExplainer::TokenLookup percent = [](std::int64_t) { return std::optional<std::string>("%1"); };
    const trace::Event slide{12, 3, 4, trace::WindowSlideEvent{1, 5, 7, 2}};
    const QString why = EventExplainer::why(slide, trace::StepState{}, percent);
    EXPECT_TRUE(why.contains("slid past '%1', so attention now starts at position 5")) << why.toStdString();
    const trace::Event end{3, -1, 0, trace::StepEndEvent{66, "%2", 1000}};
    EXPECT_EQ(EventExplainer::summary(end), "produced 66 '%2' in 1.0 µs");
}

TEST(EventExplainerTest, FormatsBytes) {
    EXPECT_EQ(EventExplainer::formatBytes(0), "0 B");
    EXPECT_EQ(EventExplainer::formatBytes(1023), "1023 B");
    EXPECT_EQ(EventExplainer::formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(EventExplainer::formatBytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
}

/// Every event explained as the event log shows it (its step's state, the session's tokens, press and
/// serving history): step, layer and kind, then the summary and the why, one line each.
std::string explainedSession(std::span<const trace::Event> events, const trace::SessionMetadata& metadata) {
    trace::Timeline timeline;
    timeline.emitAll(events);
    PagedHistory paged;
    paged.extend(timeline);
    const std::optional<config::PressSettings> press =
        config::PressSettings::fromCacheSettings(metadata.cacheSettingsJson);
    const EventExplainer::TokenLookup tokens = [&](std::int64_t position) {
        return SessionTokens::pieceAt(metadata, timeline, position);
    };
    std::string text;
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step) {
        const trace::StepState state = timeline.stateAt(step);
        for (const trace::Event& event : timeline.eventsOfStep(step).span()) {
            text += "step " + std::to_string(event.step) + " layer " + std::to_string(event.layer) + " " +
                    std::string(trace::toString(event.kind())) + "\n  " +
                    EventExplainer::summary(event).toStdString() + "\n  " +
                    EventExplainer::why(event, state, tokens, press, &paged).toStdString() + "\n";
        }
    }
    return text;
}

// Golden outputs (tests/data/goldens/explainers/): the sentences of every event of the sample sessions, of
// the paged views' serving sessions and of one event of every kind, byte for byte.
TEST(EventExplainerTest, SampleSessionsReadAsTheirGoldenFiles) {
    std::vector<std::filesystem::path> files;
    const auto add = [&files](const std::filesystem::path& folder, const std::string& prefix) {
        for (const auto& entry : std::filesystem::directory_iterator(folder)) {
            if (entry.path().extension() == ".kvsess" && entry.path().filename().string().starts_with(prefix)) {
                files.push_back(entry.path());
            }
        }
    };
    add(std::filesystem::path(KVSCOPE_SOURCE_DIR) / "sessions", "");
    add(std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions", "golden-");
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files.size(), 15U);
    for (const std::filesystem::path& file : files) {
        const trace::SessionContents contents = trace::SessionReader::read(file);
        EXPECT_TRUE(kvscope::testing::GoldenFile::matches("explainers/" + file.stem().string() + ".txt",
                                                          explainedSession(contents.events, contents.metadata)));
    }
}

TEST(EventExplainerTest, ServingSessionsReadAsTheirGoldenFiles) {
    paged::PagedConfig chat = testing::exampleConfig();
    chat.numBlocks = 30;
    chat.blockSize = 16;
    chat.maxNumBatchedTokens = 256;
    const std::vector<std::pair<std::string, std::vector<trace::Event>>> sessions = {
        {"design-example", testing::designExample()},
        {"shared-finish", testing::sharedFinish()},
        {"preemption", testing::preemption()},
        {"chat-shared-system-prompt", testing::builtInWorkload("chat-shared-system-prompt", chat)},
    };
    for (const auto& [name, events] : sessions) {
        EXPECT_TRUE(kvscope::testing::GoldenFile::matches("explainers/paged-" + name + ".txt",
                                                          explainedSession(events, trace::SessionMetadata{})));
    }
}

TEST(EventExplainerTest, EveryKindReadsAsItsGoldenFile) {
    trace::StepState state;
    state.layers.resize(2);
    std::string text;
    for (const trace::EventPayload& payload : explainerEveryKindPayloads()) {
        const trace::Event event{3, 1, 7, payload};
        text += std::string(trace::toString(event.kind())) + "\n  " + EventExplainer::summary(event).toStdString() +
                "\n  " + EventExplainer::why(event, state).toStdString() + "\n";
    }
    EXPECT_TRUE(kvscope::testing::GoldenFile::matches("explainers/every-kind.txt", text));
}

} // namespace
} // namespace kvscope::gui
