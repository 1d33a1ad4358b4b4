// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>
#include <functional>

class QEvent;
class QPoint;
class QWidget;

namespace kvscope::gui {

/// A painted view's tooltips: the text of the cell under the pointer, or none off the cells.
class CellToolTip {
public:
    /// Handles `event` when it asks `widget` for a tooltip (true), showing `textAt` the pointer, or hiding the
    /// tooltip where that is empty; false for any other event.
    static bool handle(QWidget& widget, QEvent* event, const std::function<QString(const QPoint&)>& textAt);
};

} // namespace kvscope::gui
