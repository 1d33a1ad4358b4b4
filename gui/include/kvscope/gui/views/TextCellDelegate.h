// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/StaticTextCache.h"

#include <QStyledItemDelegate>

namespace kvscope::gui {

/// Paints a table's cells directly, one line of text each (selection, alignment, elision; bold where
/// the item role `boldRole` is true): the style's generic item painting lays every cell's text out
/// anew and resolves its font per cell, which cost most of a table's repaint.
class TextCellDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    /// boldRole < 0: no cell is bold.
    explicit TextCellDelegate(int boldRole, QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    /// Measured in bold, the widest a cell is drawn, so a column fitted to its contents never elides
    /// the values that the next step makes bold.
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

private:
    void useFont(const QFont& font) const;

    /// Regular and bold texts in the view's font (painting is const; the caches are not the state).
    mutable StaticTextCache m_regular;
    mutable StaticTextCache m_bold;
    mutable bool m_fontsSet = false;
    int m_boldRole;
};

} // namespace kvscope::gui
