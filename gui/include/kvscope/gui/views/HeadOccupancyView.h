// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/HeadOccupancyGeometry.h"
#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/models/PressHistory.h"
#include "kvscope/gui/views/StaticTextCache.h"

#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// The selected layer expanded into its KV heads at the current step: one row per head, one column per
/// position, each position coloured by what the latest press decision left that head (kept, dropped,
/// masked by AdaKV, or arrived since). Per-head presses show rows of different lengths, uniform ones
/// identical rows; each row is labelled with its head's budget. A press that re-rotated the kept keys
/// (KeyRerotation) adds under each head its position map and a row of the positions the keys now encode;
/// a channel press (ThinK) lists each head's zeroed channels. Hovering says what a cell holds; the selected
/// token position is outlined. Reads the session's compression events.
class HeadOccupancyView : public QWidget {
    Q_OBJECT
public:
    HeadOccupancyView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// The layer shown: the selected one, else the first.
    int shownLayer() const;
    /// The latest decision on the shown layer at or before the current step; nullopt before any.
    std::optional<HeadDecision> decision() const;
    /// Positions the layer has seen at the current step (the columns).
    std::int64_t positions() const;
    /// Each head's row at the current step (empty before any decision).
    std::vector<std::vector<HeadRun>> rows() const;
    /// Each head's rotated row (HeadOccupancyGeometry::rotatedRunsOf; empty unless the keys were re-rotated).
    std::vector<std::vector<HeadRun>> rotatedRows() const;
    /// What the cell under `point` holds, in words (the tooltip); empty off the rows.
    QString toolTipAt(const QPoint& point) const;
    QSize sizeHint() const override { return {640, 150}; }
    QSize minimumSizeHint() const override { return {240, 80}; }

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    /// Where the rows lie: one band per head, its token row on top; a re-rotated decision adds the map
    /// strip and the rotated row below it.
    struct Layout {
        QRect area;
        PositionSpan span;
        double rowHeight = 0.0;
        int rowsPerHead = 1;
        int heads = 0;
        double bandTop(int head) const { return area.top() + head * rowHeight * rowsPerHead; }
    };
    Layout layoutOf(const HeadDecision& decision) const;

    SessionController& m_session;
    ViewSelection& m_selection;
    /// The session's compressions, read as it grows.
    mutable PressHistory m_history;
    StaticTextCache m_texts;
};

} // namespace kvscope::gui
