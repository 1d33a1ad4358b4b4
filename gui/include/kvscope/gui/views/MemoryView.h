// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/gui/models/PressHistory.h"
#include "kvscope/gui/views/StepChart.h"

#include <QString>
#include <optional>
#include <string>

namespace kvscope::gui {

/// Bytes per memory tier over steps (device full precision, device quantized, host), from the
/// cache-wide Memory events, downsampled to the chart's width keeping peaks. Over the chart, a note says what
/// the session's press saved (PressSavings): evictions their tokens' bytes, masks and rewritten keys nothing.
class MemoryView : public StepChart {
    Q_OBJECT
public:
    MemoryView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);
    /// The note shown over the chart ("" for none).
    const QString& note() const { return m_note; }

protected:
    void rebuild() override;
    void forgetSession() override { m_history.reset(); }

private:
    QCPGraph* m_tiers[3];
    /// The session's compressions, read as it grows.
    PressHistory m_history;
    /// The session's press, parsed from its cache settings once per settings (a live session's arrive with
    /// its first batch, after the view has seen the session begin).
    std::string m_cacheSettingsJson;
    std::optional<config::PressSettings> m_press;
    QString m_note;
};

} // namespace kvscope::gui
