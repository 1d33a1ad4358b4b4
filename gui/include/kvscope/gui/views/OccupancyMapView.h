// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/geometry/PressGeometry.h"
#include "kvscope/gui/models/PressHistory.h"
#include "kvscope/gui/views/StaticTextCache.h"

#include <QStringList>
#include <QWidget>

class QPainter;

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kvscope::gui {

class SessionController;
class SessionFailurePanel;
class ViewSelection;

/// Layers x token positions at the current step, each position coloured by what holds it (full
/// precision, quantized, slid out, offloaded, allocated but empty), with each sliding layer's window
/// bracketed. Clicking a row selects the layer. The position axis spans the session's final extent, so
/// stepping shows the cache fill up. Under the map, a strip of the session's tokens aligned to their
/// positions, coloured by their state in the selected layer, the token this step produced outlined;
/// hovering a cell or a token names it. The selected token position (a click in the transcript) is outlined
/// across the rows, the zoomed span moving to show it. The wheel zooms the position axis about the pointer (a double
/// click shows every position again); zoomed in until a token's label fits its column, the map labels
/// its columns with their tokens, written upwards above the rows. In a session with a cache press, the
/// positions the press dropped have their own colour (lighter where only some KV heads dropped them), and
/// the score overlay shades each kept token by its press score, from its layer's lowest to its highest.
/// A live session that failed shows a SessionFailurePanel over the map: what failed, why, and a way back
/// to File → New session with the same settings (over an empty map it stays; over steps it can be put away).
class OccupancyMapView : public QWidget {
    Q_OBJECT
public:
    OccupancyMapView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// Layer row under a widget y, -1 outside the rows.
    int layerAt(int y) const;
    /// The token at the position under a widget x (map and strip share the axis); empty where the
    /// session records no text there.
    QString tokenAt(int x) const;
    /// What hovering says about one position of one layer: its token and what holds it.
    QString describe(int layer, std::int64_t position) const;
    /// The positions shown: every one, or the zoomed span.
    PositionSpan span() const;
    /// Zooms the position axis by `factor` (below 1 zooms in) about widget x; never below a few positions.
    void zoom(double factor, int x);
    /// Shows every position again.
    void resetZoom();
    /// The columns labelled with their tokens at the current zoom and width (none while they do not fit).
    std::vector<ColumnLabel> columnLabels() const;
    /// What the map colours a position of a layer at the current step (press drops included).
    std::optional<SlotState> slotAt(int layer, std::int64_t position) const;
    /// The score overlay: off by default; it shows where the press recorded kept tokens' scores.
    void setScoreOverlay(bool shown);
    bool scoreOverlay() const { return m_scoreOverlay; }
    /// Whether the session's press scored kept tokens of any layer up to the current step.
    bool hasPressScores() const;
    /// The legend's entries, line by line (the press's line only in sessions with a press; the score scale
    /// while the overlay shows).
    QStringList legendEntries() const;
    /// The failed live session's panel (hidden while the session has not failed, or once dismissed).
    SessionFailurePanel* failurePanel() const { return m_failurePanel; }
    QSize sizeHint() const override { return {640, 320}; }
    QSize minimumSizeHint() const override { return {240, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QRect mapRect() const;
    /// The legend's lines: one, and a second for the press's states in a session with a press.
    int legendHeight() const;
    /// The map's width, the same with or without column labels.
    int mapWidth() const;
    /// The band above the rows holding the column labels; empty while none fits.
    QRect columnLabelRect() const;
    void paintColumnLabels(QPainter& painter, const PositionSpan& span);
    QRect tokenStripRect() const;
    /// The layer whose states colour the token strip: the selected one, else the first.
    int stripLayer() const;
    void paintTokenStrip(QPainter& painter, const PositionSpan& span);
    int layerCount() const;
    std::int64_t extent() const;
    /// A layer's runs at the current step: the cache's, with the press's dropped positions laid over.
    std::vector<SlotSegment> segmentsFor(int layer) const;
    /// The latest compression of a layer at the current step; null where the press has not acted.
    const PressHistory::Compression* compressionOf(int layer) const;
    /// What the map draws of a compression: its dropped runs, kept scores by position and their shades.
    struct PressedLayer {
        std::vector<SlotSegment> dropped;
        std::vector<PositionScore> scores;
        std::vector<double> shades;
    };
    /// The layer's latest compression as drawn, derived once per compression; null where none.
    const PressedLayer* pressedLayer(int layer) const;
    /// Reads the session's compressions (all of them for a new session, else what it gained).
    void readPresses(bool newSession);
    void paintScores(QPainter& painter, const QRectF& row, int layer, const PositionSpan& span);
    /// Shows the failure panel while the live session has failed (unless dismissed) and places it: centred
    /// over an empty map, along the top of one with steps.
    void updateFailurePanel();

    SessionController& m_session;
    ViewSelection& m_selection;
    /// The zoomed span of positions; nullopt shows every position (and follows a growing session).
    std::optional<PositionSpan> m_zoom;
    /// Labels, legend and ticks repeat from paint to paint: laid out once.
    StaticTextCache m_texts;
    StaticTextCache m_boldTexts;
    PressHistory m_press;
    mutable std::unordered_map<const PressHistory::Compression*, PressedLayer> m_pressedLayers;
    bool m_scoreOverlay = false;
    SessionFailurePanel* m_failurePanel;
    bool m_failureDismissed = false;
};

} // namespace kvscope::gui
