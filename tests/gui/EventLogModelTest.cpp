// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/EventLogModel.h"

#include "GuiTestHelpers.h"

namespace kvscope::gui {
namespace {

using testing::WarningCollector;

TEST(EventLogModelTest, PassesTheModelTesterWhileFiltering) {
    WarningCollector warnings;
    trace::Timeline timeline;
    synthetic::SyntheticSession::generate(testing::smallSession(30, true), timeline);
    EventLogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Warning);
    for (std::int64_t step = 0; step < timeline.stepCount(); step += 5) {
        model.setEvents(timeline.eventsOfStep(step).span(), timeline.snapshotAt(step));
        model.setFilter(trace::EventKind::Transfer, -1, {});
        model.setFilter(std::nullopt, 2, QStringLiteral("update"));
        model.setFilter(std::nullopt, -1, {});
    }
    EXPECT_TRUE(warnings.messages().isEmpty()) << warnings.messages().join('\n').toStdString();
}

TEST(EventLogModelTest, FiltersByKindLayerAndText) {
    trace::Timeline timeline;
    synthetic::SyntheticSession::generate(testing::smallSession(30, true), timeline);
    const std::int64_t step = 5;
    const auto events = timeline.eventsOfStep(step);
    EventLogModel model;
    model.setEvents(events, timeline.snapshotAt(step));
    EXPECT_EQ(model.rowCount(), static_cast<int>(events.size()));

    model.setFilter(trace::EventKind::Update, -1, {});
    EXPECT_EQ(model.rowCount(), 8) << "one update per layer";
    for (int row = 0; row < model.rowCount(); ++row) {
        EXPECT_EQ(model.eventAt(row)->kind(), trace::EventKind::Update);
        EXPECT_EQ(model.index(row, EventLogModel::Kind).data().toString(), "update");
        EXPECT_FALSE(model.index(row, EventLogModel::Why).data().toString().isEmpty());
    }
    model.setFilter(trace::EventKind::Update, 3, {});
    ASSERT_EQ(model.rowCount(), 1);
    EXPECT_EQ(model.eventAt(0)->layer, 3);

    model.setFilter(std::nullopt, -1, QStringLiteral("PREFETCHED")); // no event says that
    EXPECT_EQ(model.rowCount(), 0);
    model.setFilter(std::nullopt, -1, QStringLiteral("side stream")); // the prefetch explanation
    EXPECT_GT(model.rowCount(), 0);
    for (int row = 0; row < model.rowCount(); ++row) {
        EXPECT_EQ(model.eventAt(row)->kind(), trace::EventKind::Transfer);
    }
    EXPECT_EQ(model.totalCount(), events.size());
    EXPECT_EQ(model.eventAt(model.rowCount()), nullptr);
}

} // namespace
} // namespace kvscope::gui
