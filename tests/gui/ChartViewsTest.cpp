// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryView and QuantizationView: the two charts over steps (StepChart).

#include "GuiTestHelpers.h"
#include "kvscope/gui/views/MemoryView.h"
#include "kvscope/gui/views/QuantizationView.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QWheelEvent>

namespace kvscope::gui {
namespace {

TEST(ChartViewsTest, MemoryViewPlotsTheTiers) {
    SessionController session;
    ViewSelection selection;
    MemoryView view(session, selection);
    view.resize(600, 250);
    EXPECT_EQ(view.graph(0)->dataCount(), 0);
    testing::loadSynthetic(session, testing::smallSession(50, true));
    EXPECT_EQ(view.graph(0)->dataCount(), 52) << "one point per step at this width, and the last step's end";
    EXPECT_TRUE(view.graph(2)->visible()) << "an offloading session has host bytes";
    // Steps 0..50, the last one's stair running to 51: it shows beside the cursor, not under it.
    EXPECT_DOUBLE_EQ(view.xAxis->range().upper, 51.0);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->at(51)->key, 51.0);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->at(51)->value, view.graph(0)->data()->at(50)->value);
}

/// A two-layer session of 10 prompt tokens and 2 decoding steps, 512 bytes a cached token per layer, whose
/// press `press` decided on both layers at the prefill: `decision`, its lengthAfter the tokens each layer
/// then holds (10 when it masked or rewrote keys).
void loadPressed(SessionController& session, const std::string& press,
                 const trace::CompressionEvent& decision) {
    std::vector<trace::Event> events;
    std::uint64_t sequence = 0;
    const std::int64_t held = decision.lengthAfter;
    for (std::int64_t step = 0; step < 3; ++step) {
        events.push_back({step, -1, sequence++,
                          trace::StepBeginEvent{step == 0 ? -1 : 65, step == 0 ? "0123456789" : "A"}});
        for (std::int32_t layer = 0; layer < 2; ++layer) {
            const std::int64_t stored = step == 0 ? 10 : held + step;
            events.push_back({step, layer, sequence++,
                              trace::UpdateEvent{step == 0 ? 10 : 1, 10 + step, stored, -1, stored,
                                                 stored * 512, trace::LayerKind::Dynamic}});
            if (step == 0) {
                events.push_back({0, layer, sequence++, decision});
            }
        }
        events.push_back({step, -1, sequence++, trace::MemoryEvent{2 * 512 * (held + step), 0, 0}});
        events.push_back({step, -1, sequence++, trace::StepEndEvent{65, "A", 1000}});
    }
    trace::SessionMetadata metadata;
    metadata.model = "llama";
    metadata.cacheKind = "dynamic";
    metadata.cacheSettingsJson = R"({"press":{"name":")" + press + R"(","ratio":0.5,"options":{}}})";
    metadata.prompt = "0123456789";
    session.setRecordedSession(metadata, std::move(events), QStringLiteral("pressed"));
}

// The memory view's note is honest: a press that masks (AdaKV, CriticalAdaKV) or zeroes key channels (ThinK)
// saves 0 bytes, one that evicts saves what it evicted, and the chart agrees (4 tokens x 2 layers x 512 bytes
// less than the masking run at the last step).
TEST(ChartViewsTest, MemoryViewSaysWhatThePressSaved) {
    trace::CompressionEvent masked;
    masked.lengthBefore = 10;
    masked.lengthAfter = 10;
    masked.heads = 2;
    masked.droppedCount = 8;
    masked.keptPerHead = {7, 5};
    trace::CompressionEvent zeroed;
    zeroed.lengthBefore = 10;
    zeroed.lengthAfter = 10;
    zeroed.heads = 2;
    zeroed.prunedChannels = {0, 3, 1, 2};
    trace::CompressionEvent evicted;
    evicted.lengthBefore = 10;
    evicted.lengthAfter = 6;
    evicted.heads = 2;
    evicted.droppedCount = 4;
    trace::CompressionEvent rerotated = evicted;
    rerotated.keptRecorded = 12;
    rerotated.positions = {0, 1, 6, 7, 8, 9, 0, 1, 6, 7, 8, 9, 2, 3, 4, 5, 2, 3, 4, 5};
    rerotated.rotaryPositions = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    struct Case {
        std::string press;
        trace::CompressionEvent decision;
        const char* note;
        double lastBytes;
    };
    const std::vector<Case> cases = {
        {"adakv", masked,
         "AdaKV masks slots per head: the cache keeps every token, this press saves no memory (0 B saved)",
         12288},
        {"criticaladakv", masked,
         "CriticalAdaKV masks slots per head: the cache keeps every token, this press saves no memory (0 B "
         "saved)",
         12288},
        {"think", zeroed,
         "ThinK rewrites keys in place: every token and byte stays, this press saves no memory (0 B saved)",
         12288},
        {"snapkv", evicted, "SnapKV evicted 8 token slots per KV head in 2 layers: 4.0 KiB saved", 8192},
        {"key_rerotation", rerotated,
         "KeyRerotation evicted 8 token slots per KV head in 2 layers: 4.0 KiB saved", 8192},
    };
    SessionController session;
    ViewSelection selection;
    MemoryView view(session, selection);
    view.resize(600, 250);
    for (const Case& test : cases) {
        loadPressed(session, test.press, test.decision);
        EXPECT_EQ(view.note().toStdString(), test.note) << test.press;
        ASSERT_GT(view.graph(0)->dataCount(), 0) << test.press;
        EXPECT_DOUBLE_EQ((view.graph(0)->data()->constEnd() - 1)->value, test.lastBytes) << test.press;
    }
    // Without a press there is nothing to say.
    testing::loadSynthetic(session, testing::smallSession(10));
    EXPECT_TRUE(view.note().isEmpty()) << view.note().toStdString();
}

TEST(ChartViewsTest, QuantizationViewFindsFlushes) {
    SessionController session;
    ViewSelection selection;
    QuantizationView view(session, selection);
    view.resize(600, 250);
    const auto options = testing::smallSession(50);
    testing::loadSynthetic(session, options);
    // One quantized layer (layer 4 of 8) flushing every residualLength steps.
    EXPECT_GE(view.flushCount(), static_cast<std::size_t>(50 / options.residualLength));
    EXPECT_EQ(view.graphCount(), 3) << "markers, errors and one residual graph";
    EXPECT_GT(view.graph(2)->dataCount(), 0);
}

TEST(ChartViewsTest, QuantizationViewForgetsTheSessionItReplaced) {
    // A second session with more events than the first: its flushes only, not the first one's too.
    auto first = testing::smallSession(50);
    auto second = testing::smallSession(80);
    second.residualLength = 16;
    SessionController fresh;
    ViewSelection freshSelection;
    QuantizationView reference(fresh, freshSelection);
    testing::loadSynthetic(fresh, second);
    SessionController session;
    ViewSelection selection;
    QuantizationView view(session, selection);
    testing::loadSynthetic(session, first);
    ASSERT_GT(view.flushCount(), 0u);
    testing::loadSynthetic(session, second);
    EXPECT_EQ(view.flushCount(), reference.flushCount());
}

TEST(ChartViewsTest, ZoomReadsTheVisibleStepsInFullDetail) {
    SessionController session;
    ViewSelection selection;
    MemoryView view(session, selection);
    view.resize(600, 250);
    testing::loadSynthetic(session, testing::smallSession(3000));
    EXPECT_LE(view.graph(0)->dataCount(), 600) << "3001 steps downsampled to the width";
    EXPECT_EQ(view.graph(0)->lineStyle(), QCPGraph::lsLine);
    view.xAxis->setRange(100, 120);
    view.replot();
    // Steps 99..121 (one beyond each edge), one point each, drawn as stairs.
    ASSERT_EQ(view.graph(0)->dataCount(), 23);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->constBegin()->key, 99.0);
    EXPECT_EQ(view.graph(0)->lineStyle(), QCPGraph::lsStepLeft);
    selection.clearStepRange();
    view.replot();
    EXPECT_LE(view.graph(0)->dataCount(), 600);
    EXPECT_GT((view.graph(0)->data()->constEnd() - 1)->key, 2990.0) << "the whole session again";
}

TEST(ChartViewsTest, ZoomIsSharedBetweenCharts) {
    SessionController session;
    ViewSelection selection;
    MemoryView memory(session, selection);
    QuantizationView quantization(session, selection);
    memory.resize(600, 250);
    quantization.resize(600, 250);
    testing::loadSynthetic(session, testing::smallSession(50));
    memory.xAxis->setRange(10, 20);
    EXPECT_TRUE(selection.hasStepRange());
    EXPECT_DOUBLE_EQ(quantization.xAxis->range().lower, 10.0);
    EXPECT_DOUBLE_EQ(quantization.xAxis->range().upper, 20.0);
    selection.clearStepRange();
    EXPECT_DOUBLE_EQ(memory.xAxis->range().upper, 51.0)
        << "the whole session, the last step's stair included";
}

} // namespace
} // namespace kvscope::gui
