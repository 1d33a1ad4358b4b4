// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/PoolGeometry.h"

#include <QStringList>
#include <QWidget>
#include <vector>

class QComboBox;
class QLabel;

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// A serving session's block pool at the current step: one cell per block in a wrapping grid, coloured
/// by the running request holding it (a stable colour per request, named in the legend), free blocks
/// empty, cached-but-free blocks grey with their free-queue rank (0 is evicted next), blocks shared by
/// several requests outlined with their reference count, and the step's changes marked (allocated: a
/// green corner; reused by a prefix hit: a blue ring; evicted: a red cross). Hovering a block names its
/// request(s), token range, tokens as text and hash prefix; clicking selects its request. With several
/// layer groups a picker shows one group's tables, the others' blocks faded. Reads only the session's
/// StepState and PagedHistory: live and replayed sessions alike.
class BlockPoolView : public QWidget {
    Q_OBJECT
public:
    BlockPoolView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// The cells at the current step (empty for a session without a pool).
    const std::vector<BlockCell>& cells() const { return m_cells; }
    /// -1: every group (the default).
    void setGroup(int group);
    int group() const { return m_group; }
    /// The block under a widget point, -1 elsewhere.
    int blockAt(QPoint point) const;
    /// Where a block's cell is drawn (empty for a block the pool does not have).
    QRect cellRect(int block) const;
    /// What hovering a block says.
    QString describeBlock(int block) const;
    /// One line per entry: the requests holding blocks (and which are running), then the cell kinds.
    QStringList legendEntries() const;
    /// The line over the grid: blocks used, cached, free; the step's hits and evictions.
    QString headline() const;
    QSize sizeHint() const override { return {640, 300}; }
    QSize minimumSizeHint() const override { return {240, 140}; }

signals:
    void requestClicked(const QString& requestId);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void reload();
    void relayout();
    QRect gridRect() const;
    int legendHeight() const;

    SessionController& m_session;
    ViewSelection& m_selection;
    QComboBox* m_groups;
    QLabel* m_headline;
    int m_group = -1;
    std::vector<BlockCell> m_cells;
    PoolLayout m_layout;
};

} // namespace kvscope::gui
