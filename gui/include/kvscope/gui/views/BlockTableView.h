// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>
#include <cstdint>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// The selected request's block table at the current step, drawn over its token positions: each table
/// slot a block spanning block_size positions, labelled with its block id, its computed positions in the
/// request's colour with their tokens as text (allocated but not yet computed ones paler), blocks shared
/// with another request outlined, and the prefix-cache hit of its admission underlined. One row per layer
/// group; holes of sliding-window groups are hatched. Without a selection it shows the first running
/// request. Reads only StepState and PagedHistory. Token text goes in each position's cell when cells
/// are wide enough for it (18 px); narrower (a chat's 200 tokens over a window's width leave 7 px each),
/// each block shows its tokens as one text across its cells, elided to the block's width: a block is the
/// unit that is cached and shared, and 16 tokens of 7 px leave room for about 15 characters where one
/// token's 7 px leave none. Hovering names the token and its whole block's text.
class BlockTableView : public QWidget {
    Q_OBJECT
public:
    BlockTableView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// The request shown: the selected one, else the first running one, else empty.
    QString shownRequest() const;
    /// The line over the table ("r2: 29 tokens in blocks 0 1 2 7 8 9 4 3 ...").
    QString headline() const;
    /// The token position under a widget x in the first group's row, -1 elsewhere.
    std::int64_t positionAt(int x) const;
    /// The text drawn across a table slot's block at the current width (its tokens, elided to the block),
    /// empty where each position's cell shows its own token or the block has no room or no text.
    QString blockText(std::size_t group, std::size_t slot) const;
    /// All the tokens a table slot's block holds (known so far), visible: what its tooltip quotes.
    QString fullBlockText(std::size_t slot) const;
    QSize sizeHint() const override { return {640, 110}; }
    QSize minimumSizeHint() const override { return {240, 70}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    /// Pixels per token position for `positions` positions.
    double positionWidth(std::int64_t positions) const;
    std::int64_t positionExtent() const;

    SessionController& m_session;
    ViewSelection& m_selection;
};

} // namespace kvscope::gui
