// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/FlushMarkerGeometry.h"
#include "kvscope/gui/views/StepChart.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// Quantized layers over steps: each layer's full-precision residual (it fills token by token and
/// drops at a flush), a marker at every flushing step (one per few pixels where they crowd) and its worst
/// relative quantization error on the right axis (only the selected layer's when one is selected). Flushes
/// are collected incrementally as a live session grows.
class QuantizationView : public StepChart {
    Q_OBJECT
public:
    QuantizationView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// Flushes seen so far (for tests).
    std::size_t flushCount() const { return m_flushes.size(); }

protected:
    void rebuild() override;
    void forgetSession() override;

private:
    void collectFlushes();

    std::vector<FlushMarkerGeometry::Flush> m_flushes;
    std::size_t m_scannedEvents = 0;
    QCPGraph* m_flushMarkers;
    QCPGraph* m_errors;
};

} // namespace kvscope::gui
