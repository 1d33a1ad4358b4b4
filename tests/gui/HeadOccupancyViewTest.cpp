// SPDX-License-Identifier: GPL-3.0-or-later
// HeadOccupancyView: a re-rotating press's decision draws each head's position map and the keys at their new
// positions, and hovering says where each key came from.

#include "kvscope/gui/views/HeadOccupancyView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QImage>

#include <set>

namespace kvscope::gui {
namespace {

using RunsInHeadOccupancyView = std::vector<HeadRun>;
constexpr HeadSlot KInHeadOccupancyView = HeadSlot::Kept;
constexpr HeadSlot DInHeadOccupancyView = HeadSlot::Dropped;
constexpr HeadSlot LInHeadOccupancyView = HeadSlot::Later;
constexpr HeadSlot VInHeadOccupancyView = HeadSlot::Vacant;

/// KeyRerotation over the 12 prompt positions: head 0 kept 0 1 2 9 10 11, head 1 kept 0 3 4 5 10 11, each
/// head's keys re-rotated to 0..5.
trace::CompressionEvent rerotated() {
    trace::CompressionEvent event{12, 6, 2, 6, 12, {0, 1, 2, 9, 10, 11, 0, 3, 4, 5, 10, 11}, {}, {}, {}};
    for (std::int64_t dropped : {3, 4, 5, 6, 7, 8, 1, 2, 6, 7, 8, 9}) {
        event.positions.push_back(dropped);
    }
    event.rotaryPositions = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    return event;
}

/// The re-rotating decision on layer 3, selected, two steps after it.
void showRerotated(SessionController& session, ViewSelection& selection) {
    testing::loadWithCompression(session, 3, rerotated());
    selection.setSelectedLayer(3);
    session.setCurrentStep(2);
}

bool anyContains(const std::set<std::string>& texts, const std::string& part) {
    return std::any_of(texts.begin(), texts.end(),
                       [&](const std::string& text) { return text.find(part) != std::string::npos; });
}

TEST(HeadOccupancyViewTest, ReRotatedKeysShowAtTheirNewPositionsWithWhereTheyCameFrom) {
    SessionController session;
    ViewSelection selection;
    HeadOccupancyView view(session, selection);
    view.resize(700, 260);
    showRerotated(session, selection);
    ASSERT_TRUE(view.decision().has_value());
    ASSERT_TRUE(view.decision()->rerotated());
    EXPECT_EQ(view.positions(), 14);
    // The token rows: what each head kept and dropped, where the tokens were.
    EXPECT_EQ(view.rows(),
              (std::vector<RunsInHeadOccupancyView>{{{0, 3, KInHeadOccupancyView}, {3, 9, DInHeadOccupancyView}, {9, 12, KInHeadOccupancyView}, {12, 14, LInHeadOccupancyView}},
                                 {{0, 1, KInHeadOccupancyView}, {1, 3, DInHeadOccupancyView}, {3, 6, KInHeadOccupancyView}, {6, 10, DInHeadOccupancyView}, {10, 12, KInHeadOccupancyView}, {12, 14, LInHeadOccupancyView}}}));
    // The rotated rows: the 6 keys at 0..5, nothing rotated to 6..11, the new tokens at their own positions.
    EXPECT_EQ(view.rotatedRows(), (std::vector<RunsInHeadOccupancyView>{{{0, 6, KInHeadOccupancyView}, {6, 12, VInHeadOccupancyView}, {12, 14, LInHeadOccupancyView}},
                                                     {{0, 6, KInHeadOccupancyView}, {6, 12, VInHeadOccupancyView}, {12, 14, LInHeadOccupancyView}}}));
    const std::set<std::string> texts = testing::toolTipsOver(view);
    for (const char* expected : {
             "head 0: the key of position 9",
             "was re-rotated to position 3 (re-rotated from 9)",
             "head 1: the key of position 5",
             "was re-rotated to position 3 (re-rotated from 5)",
             ": kept; its key was re-rotated from 10 to 4",
             "head 0, position 7: no kept key's rotation encodes it any more (the 6 kept keys sit at "
             "positions "
             "0–5)",
             ": arrived after the decision, at its own position",
         }) {
        EXPECT_TRUE(anyContains(texts, expected)) << expected;
    }
    view.show();
    EXPECT_FALSE(view.grab().isNull());

    // A press that keeps the rotations has one row per head and no map.
    trace::CompressionEvent plain = rerotated();
    plain.rotaryPositions.clear();
    testing::loadWithCompression(session, 3, plain);
    selection.setSelectedLayer(3);
    session.setCurrentStep(2);
    ASSERT_TRUE(view.decision().has_value());
    EXPECT_FALSE(view.decision()->rerotated());
    EXPECT_TRUE(view.rotatedRows().empty());
    EXPECT_FALSE(anyContains(testing::toolTipsOver(view), "re-rotated"));
}

TEST(HeadOccupancyViewTest, TheSelectedPositionIsOutlined) {
    SessionController session;
    ViewSelection selection;
    HeadOccupancyView view(session, selection);
    view.resize(700, 260);
    showRerotated(session, selection);
    const QImage unselected = view.grab().toImage();
    selection.setSelectedPosition(7);
    EXPECT_NE(view.grab().toImage(), unselected);
    selection.setSelectedPosition(-1);
    EXPECT_EQ(view.grab().toImage(), unselected);
}

} // namespace
} // namespace kvscope::gui
