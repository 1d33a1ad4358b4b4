// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/StepChart.h"

namespace kvscope::gui {

/// Bytes per memory tier over steps (device full precision, device quantized, host), from the
/// cache-wide Memory events, downsampled to the chart's width keeping peaks.
class MemoryView : public StepChart {
    Q_OBJECT
public:
    MemoryView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

protected:
    void rebuild() override;

private:
    QCPGraph* m_tiers[3];
};

} // namespace kvscope::gui
