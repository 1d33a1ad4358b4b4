// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/MemoryView.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/gui/models/PressSavings.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <algorithm>

namespace kvscope::gui {
namespace {

// Tick labels in bytes units (KiB, MiB, ...).
class ByteTicker : public QCPAxisTicker {
protected:
    QString getTickLabel(double tick, const QLocale&, QChar, int) override { return EventExplainer::formatBytes(tick); }
};

} // namespace

MemoryView::MemoryView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : StepChart(session, selection, tr("Memory per tier"), parent) {
    const QString names[3] = {tr("device, full precision"), tr("device, quantized"), tr("host (offloaded)")};
    const QColor colours[3] = {PlotStyle::slotColour(SlotState::FullPrecision), PlotStyle::slotColour(SlotState::Quantized),
                               PlotStyle::slotColour(SlotState::Offloaded)};
    for (int tier = 0; tier < 3; ++tier) {
        m_tiers[tier] = addGraph();
        m_tiers[tier]->setName(names[tier]);
        m_tiers[tier]->setPen(QPen(colours[tier], 1));
        QColor fill = colours[tier];
        fill.setAlpha(40);
        m_tiers[tier]->setBrush(fill);
    }
    QSharedPointer<QCPAxisTicker> bytes(new ByteTicker);
    bytes->setTickCount(4);
    yAxis->setTicker(bytes);
    PlotStyle::legendBelow(this);
    rebuild();
}

void MemoryView::rebuild() {
    const trace::SeriesField fields[3] = {trace::SeriesField::BytesDeviceFullPrecision,
                                          trace::SeriesField::BytesDeviceQuantized, trace::SeriesField::BytesHost};
    const trace::Timeline& timeline = m_session.timeline();
    const auto [first, last] = sampledSteps();
    double maxValue = 0.0;
    for (int tier = 0; tier < 3; ++tier) {
        m_tiers[tier]->setLineStyle(seriesLineStyle());
        QVector<double> keys;
        QVector<double> values;
        if (timeline.stepCount() > 0) {
            for (const trace::SeriesPoint& point :
                 timeline.seriesOf(-1, fields[tier], first, last, pointBudget())) {
                keys << static_cast<double>(point.step);
                values << point.value;
                maxValue = std::max(maxValue, point.value);
            }
        }
        setSeries(m_tiers[tier], keys, values);
        m_tiers[tier]->setVisible(tier == 0 || (!values.isEmpty() && *std::max_element(values.begin(), values.end()) > 0));
        if (m_tiers[tier]->visible()) {
            m_tiers[tier]->addToLegend();
        } else {
            m_tiers[tier]->removeFromLegend();
        }
    }
    yAxis->setRange(0.0, std::max(1024.0, maxValue * 1.1));
    // What the press saved, from its decisions: evictions their tokens' bytes, masks and rewritten keys
    // nothing. Before its first decision, the registration's policy says what it will do.
    if (m_session.metadata().cacheSettingsJson != m_cacheSettingsJson) {
        m_cacheSettingsJson = m_session.metadata().cacheSettingsJson;
        m_press = config::PressSettings::fromCacheSettings(m_cacheSettingsJson);
    }
    const std::optional<config::PressSettings>& press = m_press;
    const config::PressDescription* described =
        press ? config::PressDescriptions::find(press->name) : nullptr;
    QString note;
    if (press && timeline.stepCount() > 0) {
        m_history.update(timeline);
        const std::int64_t last = timeline.stepCount() - 1;
        const QString name = described != nullptr ? QString::fromStdString(described->displayName)
                                                  : QString::fromStdString(press->name);
        note = PressSavings::note(name,
                                  PressSavings::of(m_history.compressions(), timeline.stateAt(last), last));
    }
    if (note.isEmpty() && described != nullptr && !described->policy.savesMemory()) {
        note = described->policy.rewritesKeys()
                   ? tr("%1 rewrites keys in place: every token and byte stays, this press saves no memory")
                   : tr("%1 masks slots per head: the cache keeps every token, this press saves no memory");
        note = note.arg(QString::fromStdString(described->displayName));
    }
    m_note = timeline.stepCount() == 0 ? tr("No session") : note;
    setMessage(m_note);
}

} // namespace kvscope::gui
