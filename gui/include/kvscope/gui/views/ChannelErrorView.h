// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/ChannelErrorHistory.h"

#include <QWidget>
#include <optional>

class QComboBox;
class QLabel;

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// Each quantising layer's error per KV head and channel at the current step (llama.cpp's cache): two heat maps,
/// keys and values, one row per layer and one column per channel of each KV head in turn, coloured by the measure
/// chosen: the quantisation error, the channel's size, or the error relative to that size. Outlier key channels,
/// and what the Walsh-Hadamard rotation does to their blocks, show at a glance. Each layer's row is its latest
/// report (every token it has quantised); hovering names a cell's figures, a click selects its layer. Reads the
/// session's channel_error events.
class ChannelErrorView : public QWidget {
    Q_OBJECT
public:
    enum class Measure { Error, Size, Relative };

    ChannelErrorView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// Whether the session has reported any channel error (the dock shows once it has).
    bool hasReports() const;
    Measure measure() const;
    void setMeasure(Measure measure);
    /// The value a cell shows: `layer`'s report at the current step, its keys (else values), KV head and channel;
    /// nullopt where the layer has no report yet or the cell is outside it.
    std::optional<double> valueAt(int layer, bool keys, int head, int channel) const;
    /// The top of the keys' (values') colour scale: the largest value of the panel at the current step.
    double scaleTop(bool keys) const;
    /// The text above the maps: what they show, the cache's types and the worst key channel.
    QString headline() const;
    /// What the cell under `point` holds, in words (the tooltip); empty off the maps.
    QString toolTipAt(const QPoint& point) const;
    /// The layer of the row under `point`, -1 off the maps.
    int layerAt(const QPoint& point) const;
    QSize sizeHint() const override { return {900, 300}; }
    QSize minimumSizeHint() const override { return {320, 140}; }

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    /// Where the two maps lie: the keys' panel left, the values' right, one row per layer.
    struct Layout {
        QRect keys;
        QRect values;
        int layers = 0;
        int heads = 0;
        int keyDim = 0;
        int valueDim = 0;
        double rowHeight = 0.0;
    };
    Layout layoutOf() const;
    /// Reads new events and sets the headline.
    void refresh();
    /// The report every row's shape is taken from: the latest at the current step of the first layer that has one.
    const ChannelErrorHistory::Report* shapeReport() const;
    void paintPanel(QPainter& painter, const Layout& layout, bool keys) const;
    static double measured(Measure measure, float error, float size);
    /// The value of a cell of `report` (valueAt's, with the report already looked up); nullopt outside it.
    static std::optional<double> cellOf(const ChannelErrorHistory::Report* report, bool keys, int head, int channel,
                                        Measure measure);

    SessionController& m_session;
    ViewSelection& m_selection;
    QComboBox* m_measure;
    QLabel* m_headline;
    mutable ChannelErrorHistory m_history;
};

} // namespace kvscope::gui
