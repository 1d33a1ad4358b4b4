#pragma once

#include "kvscope/gui/views/StaticTextCache.h"

#include <QWidget>

#include <cstdint>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

// Layers x token positions at the current step, each position coloured by what holds it (full
// precision, quantized, slid out, offloaded, allocated but empty), with each sliding layer's window
// bracketed. Clicking a row selects the layer. The position axis spans the session's final extent, so
// stepping shows the cache fill up.
class OccupancyMapView : public QWidget {
    Q_OBJECT
public:
    OccupancyMapView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    // Layer row under a widget y, -1 outside the rows.
    int layerAt(int y) const;
    QSize sizeHint() const override { return {640, 320}; }
    QSize minimumSizeHint() const override { return {240, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QRect mapRect() const;
    int layerCount() const;
    std::int64_t extent() const;

    SessionController& m_session;
    ViewSelection& m_selection;
    // Labels, legend and ticks repeat from paint to paint: laid out once.
    StaticTextCache m_texts;
    StaticTextCache m_boldTexts;
};

} // namespace kvscope::gui
