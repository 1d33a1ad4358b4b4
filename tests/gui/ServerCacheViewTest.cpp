// SPDX-License-Identifier: GPL-3.0-or-later
// An attached server's session in the views: ServerCacheHistory's counts, ServerPrefixTreeModel's tree and
// ServerCacheView's status line, from a literal event table (what kvscope --attach records).
#include "kvscope/gui/models/ServerCacheHistory.h"
#include "kvscope/gui/models/ServerPrefixTreeModel.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/ServerCacheChart.h"
#include "kvscope/gui/views/ServerCacheView.h"
#include "kvscope/trace/Timeline.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using trace::ServerCacheChange;
using trace::ServerCacheEvent;
using trace::ServerStatusEvent;

ServerCacheEvent serverStoredBlocks(std::vector<std::uint64_t> hashes, std::optional<std::uint64_t> parent, std::string text,
                              std::string medium = "GPU", std::int32_t group = 0) {
    // One token per block (block size 1) whose piece is one character of `text`.
    ServerCacheEvent event{ServerCacheChange::Stored, parent.has_value(), group, hashes, parent.value_or(0), {}, 1,
                           std::move(medium), text, {}};
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        event.tokenIds.push_back(static_cast<std::int64_t>(100 + i));
        event.pieceEnds.push_back(static_cast<std::int64_t>(i + 1));
    }
    return event;
}

ServerStatusEvent serverStatus(std::uint64_t sequence, std::int64_t queries = -1, std::int64_t hits = -1) {
    return ServerStatusEvent{sequence, 0.0, false, static_cast<std::int64_t>(sequence) + 1, 0, 0, queries, hits};
}

/// Step 0: a prompt "ab" (blocks 1, 2); step 1: "c" after it and "x" after block 1 (a branch), a CPU copy of
/// block 1 in group 1; step 2: block 3 removed, metrics 40 of 100; step 3: block 9 whose parent 8 is not held.
std::vector<trace::Event> attachedSession() {
    std::vector<trace::Event> events;
    const auto add = [&events](std::int64_t step, trace::EventPayload payload) {
        events.push_back(trace::Event{step, -1, events.size(), std::move(payload)});
    };
    add(0, serverStoredBlocks({1, 2}, std::nullopt, "ab"));
    add(0, serverStatus(0));
    add(1, serverStoredBlocks({3}, 2, "c"));
    add(1, serverStoredBlocks({4}, 1, "x"));
    add(1, serverStoredBlocks({1}, std::nullopt, "a", "CPU", 1));
    add(1, serverStatus(1));
    add(2, ServerCacheEvent{ServerCacheChange::Removed, false, 0, {3}, 0, {}, 0, "GPU", "", {}});
    add(2, serverStatus(2, 100, 40));
    add(3, serverStoredBlocks({9}, 8, "z"));
    add(3, serverStatus(3, 100, 40));
    return events;
}

TEST(ServerCacheViewTest, HistoryCountsBlocksPerPlaceAndStep) {
    trace::Timeline timeline;
    for (const trace::Event& event : attachedSession()) {
        timeline.emit(event);
    }
    ServerCacheHistory history;
    history.extend(timeline);
    ASSERT_TRUE(history.active());
    ASSERT_EQ(history.stepCount(), 4);
    const auto& held = history.heldBlocks();
    ASSERT_EQ(held.size(), 2U);
    EXPECT_EQ(held.at({"CPU", 1}), (std::vector<std::int64_t>{0, 1, 1, 1}));
    EXPECT_EQ(held.at({"GPU", 0}), (std::vector<std::int64_t>{2, 4, 3, 4}));
    const std::vector<std::int64_t> stored{2, 3, 0, 1};
    const std::vector<std::int64_t> removed{0, 0, 1, 0};
    const std::vector<double> hitRate{-1, -1, 40.0, 40.0};
    for (std::size_t step = 0; step < 4; ++step) {
        EXPECT_EQ(history.steps()[step].stored, stored[step]) << step;
        EXPECT_EQ(history.steps()[step].removed, removed[step]) << step;
        EXPECT_DOUBLE_EQ(history.steps()[step].hitRate, hitRate[step]) << step;
    }
}

TEST(ServerCacheViewTest, TreeHangsBlocksUnderTheirParentsWithTextAndMedia) {
    SessionController session;
    session.setRecordedSession({}, attachedSession(), QStringLiteral("attached"));
    session.setCurrentStep(3);
    ServerPrefixTreeModel model;
    model.setState(session.state()->server, 3);
    // Literal tree: a (GPU, CPU) -> b ; a -> x ; z (parent 8 not held) a root; c was removed.
    EXPECT_EQ(model.nodeCount(), 4);
    ASSERT_EQ(model.rowCount(), 2);
    const QModelIndex a = model.index(0, ServerPrefixTreeModel::Tokens);
    EXPECT_EQ(a.data().toString(), "'a'");
    EXPECT_EQ(model.index(0, ServerPrefixTreeModel::Medium).data().toString(), "GPU, CPU");
    ASSERT_EQ(model.rowCount(a), 2);
    EXPECT_EQ(model.index(0, ServerPrefixTreeModel::Tokens, a).data().toString(), "'b'");
    EXPECT_EQ(model.index(1, ServerPrefixTreeModel::Tokens, a).data().toString(), "'x'");
    EXPECT_EQ(model.index(1, ServerPrefixTreeModel::StoredAt, a).data().toLongLong(), 1);
    const QModelIndex z = model.index(1, ServerPrefixTreeModel::Tokens);
    EXPECT_EQ(z.data().toString(), "… 'z'");
    EXPECT_TRUE(z.data(ServerPrefixTreeModel::NewRole).toBool()) << "stored in the step shown";
    EXPECT_FALSE(a.data(ServerPrefixTreeModel::NewRole).toBool());
    EXPECT_TRUE(z.data(Qt::ToolTipRole).toString().contains("the block before it is not held"));
    EXPECT_EQ(model.parent(model.index(0, 0, a)), model.index(0, 0));
}

TEST(ServerCacheViewTest, ACycleInAHostileStreamStillGivesATree) {
    trace::ServerCacheState state;
    state.active = true;
    // 5 under 6 and 6 under 5: neither is a root by its parent; one of them must become one.
    state.blocks[{"GPU", 5}] = trace::ServerBlockState{5, true, 6, {1}, "p", "GPU", 0, 0, 0};
    state.blocks[{"GPU", 6}] = trace::ServerBlockState{6, true, 5, {2}, "q", "GPU", 0, 0, 1};
    ServerPrefixTreeModel model;
    model.setState(state, 0);
    ASSERT_EQ(model.rowCount(), 1);
    EXPECT_EQ(model.rowCount(model.index(0, 0)), 1);
}

TEST(ServerCacheViewTest, ViewFollowsTheStepAndSaysWhereTheStreamStands) {
    SessionController session;
    ViewSelection selection;
    trace::SessionMetadata metadata;
    metadata.model = "server tcp://127.0.0.1:5557";
    metadata.cacheKind = "server";
    session.setRecordedSession(metadata, attachedSession(), QStringLiteral("attached"));
    ServerCacheView view(session, selection);
    session.setCurrentStep(1);
    EXPECT_EQ(view.statusText(), "server tcp://127.0.0.1:5557: 2 messages. Cached blocks: 1 CPU, 4 GPU (5 stored, 0 "
                                 "removed so far).");
    EXPECT_EQ(view.treeModel()->nodeCount(), 4);
    session.setCurrentStep(2);
    EXPECT_EQ(view.statusText(), "server tcp://127.0.0.1:5557: 3 messages. Cached blocks: 1 CPU, 3 GPU (5 stored, 1 "
                                 "removed so far). Hit rate 40.0% (40 of 100 prompt tokens found cached).");
    EXPECT_EQ(view.treeModel()->nodeCount(), 3);
}

TEST(ServerCacheViewTest, ChartsPlotTheHistory) {
    SessionController session;
    ViewSelection selection;
    session.setRecordedSession({}, attachedSession(), QStringLiteral("attached"));
    ServerCacheChart held(session, selection, ServerCacheChart::Metric::BlocksHeld);
    EXPECT_EQ(held.seriesNames(), (QStringList{"CPU group 1", "GPU group 0"}));
    const auto gpu = held.series(1, 0, 3);
    ASSERT_EQ(gpu.size(), 4U);
    EXPECT_EQ(gpu[2].value, 3.0);
    ServerCacheChart rate(session, selection, ServerCacheChart::Metric::HitRate);
    const auto points = rate.series(0, 0, 3);
    ASSERT_EQ(points.size(), 2U) << "no point before the server's metrics were known";
    EXPECT_EQ(points[0].step, 2);
    EXPECT_EQ(points[0].value, 40.0);
}

} // namespace
} // namespace kvscope::gui
