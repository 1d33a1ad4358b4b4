// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PrefixTreeModel.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/models/PagedHistory.h"

#include <QAbstractItemModelTester>

namespace kvscope::gui {
namespace {

QString cellInPrefixTreeModel(const PrefixTreeModel& model, const QModelIndex& index, int column) {
    return model.data(model.index(index.row(), column, index.parent())).toString();
}

TEST(PrefixTreeModelTest, TheDesignDocumentExamplesCacheAsATree) {
    testing::WarningCollector warnings;
    trace::Timeline timeline;
    timeline.emitAll(testing::designExample());
    PagedHistory history;
    history.extend(timeline);
    PrefixTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Warning);

    // After step 4: r0's blocks 0 1 2 3 chain one under the other; r1's block 5 (its tokens 8 to 11)
    // hangs under block 1, the two requests' shared 8 tokens.
    model.setState(timeline.stateAt(4), history);
    EXPECT_EQ(model.nodeCount(), 5);
    ASSERT_EQ(model.rowCount(), 1);
    const QModelIndex root = model.index(0, 0);
    EXPECT_EQ(cellInPrefixTreeModel(model, root, PrefixTreeModel::Tokens), "'You are a helpful'");
    EXPECT_EQ(cellInPrefixTreeModel(model, root, PrefixTreeModel::Blocks), "0");
    EXPECT_EQ(cellInPrefixTreeModel(model, root, PrefixTreeModel::CachedBy), "r0");
    EXPECT_TRUE(model.data(root, PrefixTreeModel::HitRole).toBool()) << "r1 reused block 0 at step 4";
    ASSERT_EQ(model.rowCount(root), 1);
    const QModelIndex second = model.index(0, 0, root);
    EXPECT_EQ(cellInPrefixTreeModel(model, second, PrefixTreeModel::Blocks), "1");
    ASSERT_EQ(model.rowCount(second), 2) << "r0's block 2 and r1's block 5 both continue block 1";
    QStringList branches;
    for (int row = 0; row < 2; ++row) {
        const QModelIndex branch = model.index(row, 0, second);
        branches << cellInPrefixTreeModel(model, branch, PrefixTreeModel::Blocks) + ":" +
                        cellInPrefixTreeModel(model, branch, PrefixTreeModel::CachedBy);
    }
    branches.sort();
    EXPECT_EQ(branches, (QStringList{"2:r0", "5:r1"}));
    EXPECT_EQ(model.parent(second), root);

    // After step 5 block 3 was evicted: r0's 4th block is gone, r2's blocks 7 8 9 4 continue block 2.
    model.setState(timeline.stateAt(5), history);
    EXPECT_EQ(model.nodeCount(), 8); // 0 1 2 5 7 8 9 4
    const QModelIndex third = model.index(0, 0, model.index(0, 0, model.index(0, 0)));
    EXPECT_EQ(model.data(model.index(0, 0), PrefixTreeModel::HitRole).toBool(), true);
    EXPECT_EQ(model.rowCount(model.index(0, 0, model.index(0, 0))), 2);
    EXPECT_TRUE(warnings.messages().isEmpty()) << warnings.messages().join("\n").toStdString();
    (void)third;
}

TEST(PrefixTreeModelTest, EmptyForSessionsWithoutAPool) {
    testing::WarningCollector warnings;
    PrefixTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Warning);
    model.setState(trace::StepState{}, PagedHistory{});
    EXPECT_EQ(model.rowCount(), 0);
    EXPECT_EQ(model.nodeCount(), 0);
    EXPECT_TRUE(warnings.messages().isEmpty());
}

} // namespace
} // namespace kvscope::gui
