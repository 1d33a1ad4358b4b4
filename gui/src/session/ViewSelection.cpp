// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/ViewSelection.h"

namespace kvscope::gui {

void ViewSelection::setSelectedLayer(int layer) {
    layer = layer < 0 ? -1 : layer;
    if (layer == m_layer) {
        return;
    }
    m_layer = layer;
    Q_EMIT selectionChanged(layer);
}

void ViewSelection::setSelectedPosition(std::int64_t position) {
    position = position < 0 ? -1 : position;
    if (position == m_position) {
        return;
    }
    m_position = position;
    Q_EMIT positionSelected(position);
}

void ViewSelection::setSelectedRequest(const QString& request) {
    if (request == m_request) {
        return;
    }
    m_request = request;
    Q_EMIT requestSelected(request);
}

void ViewSelection::setStepRange(double first, double last) {
    if (first == m_first && last == m_last) {
        return;
    }
    m_first = first;
    m_last = last;
    Q_EMIT stepRangeChanged();
}

void ViewSelection::clearStepRange() { setStepRange(0.0, -1.0); }

} // namespace kvscope::gui
