// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/CellToolTip.h"

#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace kvscope::gui {

bool CellToolTip::handle(QWidget& widget, QEvent* event, const std::function<QString(const QPoint&)>& textAt) {
    if (event->type() != QEvent::ToolTip) {
        return false;
    }
    const auto* help = static_cast<QHelpEvent*>(event);
    const QString text = textAt(help->pos());
    if (text.isEmpty()) {
        QToolTip::hideText();
        event->ignore();
    } else {
        QToolTip::showText(help->globalPos(), text, &widget);
    }
    return true;
}

} // namespace kvscope::gui
