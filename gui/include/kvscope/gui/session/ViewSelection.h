// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QString>

#include <cstdint>

namespace kvscope::gui {

/// The selection and zoom every view shares (RenderDoc's ICaptureViewer + Qt Creator's
/// TimelineZoomControl): the selected layer, the selected token position, a serving session's selected
/// request, and the visible step range of the charts over steps.
class ViewSelection : public QObject {
    Q_OBJECT
public:
    explicit ViewSelection(QObject* parent = nullptr) : QObject(parent) {}

    int selectedLayer() const { return m_layer; }
    /// -1 clears the selection; emits selectionChanged only on a change.
    void setSelectedLayer(int layer);

    /// The selected token position (the transcript's clicked token; -1: none); emits positionSelected only on a
    /// change.
    std::int64_t selectedPosition() const { return m_position; }
    void setSelectedPosition(std::int64_t position);

    /// A serving session's request (its id; empty: none); emits requestSelected only on a change.
    const QString& selectedRequest() const { return m_request; }
    void setSelectedRequest(const QString& request);

    /// Visible steps [first, last] of the step-axis charts; hasStepRange() is false when they show all.
    bool hasStepRange() const { return m_last >= m_first; }
    double firstStep() const { return m_first; }
    double lastStep() const { return m_last; }
    void setStepRange(double first, double last);
    void clearStepRange();

signals:
    void selectionChanged(int layer);
    void requestSelected(const QString& request);
    void positionSelected(qint64 position);
    void stepRangeChanged();

private:
    int m_layer = -1;
    std::int64_t m_position = -1;
    QString m_request;
    double m_first = 0.0;
    double m_last = -1.0;
};

} // namespace kvscope::gui
