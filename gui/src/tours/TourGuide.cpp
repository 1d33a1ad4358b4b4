// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/tours/TourGuide.h"

#include "kvscope/trace/Timeline.h"

#include <algorithm>

namespace kvscope::gui {

void TourGuide::setTour(const Tour* tour) {
    m_tour = tour;
    m_steps.assign(tour ? tour->notes.size() : 0, std::nullopt);
    m_nextStep = 0;
}

void TourGuide::update(const trace::Timeline& timeline, bool finished) {
    if (!m_tour) {
        return;
    }
    const std::int64_t steps = timeline.stepCount();
    const bool any = timeline.eventCount() > 0;
    for (std::size_t index = 0; index < m_tour->notes.size(); ++index) {
        const TourTrigger& when = m_tour->notes[index].when;
        std::optional<std::int64_t>& step = m_steps[index];
        switch (when.kind) {
        case TourTrigger::Kind::Prefill:
            if (any) {
                step = 0;
            }
            break;
        case TourTrigger::Kind::Step:
            if (when.step < steps && any) {
                step = when.step;
            }
            break;
        case TourTrigger::Kind::Last:
            step = finished && any ? std::optional<std::int64_t>(steps - 1) : std::nullopt;
            break;
        case TourTrigger::Kind::FirstEvent:
            break;
        }
    }
    for (std::int64_t at = m_nextStep; at < steps && any; ++at) {
        for (const trace::Event& event : timeline.eventsOfStep(at)) {
            const QLatin1String name(trace::toString(event.kind()));
            for (std::size_t index = 0; index < m_tour->notes.size(); ++index) {
                const TourTrigger& when = m_tour->notes[index].when;
                if (when.kind == TourTrigger::Kind::FirstEvent && !m_steps[index] && when.event == name &&
                    (!when.layer || *when.layer == event.layer)) {
                    m_steps[index] = at;
                }
            }
        }
    }
    if (any) {
        m_nextStep = std::max<std::int64_t>(m_nextStep, finished ? steps : steps - 1);
    }
}

std::vector<std::size_t> TourGuide::notesAt(std::int64_t step) const {
    std::vector<std::size_t> notes;
    for (std::size_t index = 0; index < m_steps.size(); ++index) {
        if (m_steps[index] && *m_steps[index] <= step) {
            notes.push_back(index);
        }
    }
    std::stable_sort(notes.begin(), notes.end(),
                     [this](std::size_t a, std::size_t b) { return *m_steps[a] < *m_steps[b]; });
    return notes;
}

std::size_t TourGuide::notesAfter(std::int64_t step) const {
    // Counted, not derived from notesAt: the panel asks on every step and needs no sorted list for it.
    return static_cast<std::size_t>(
        std::count_if(m_steps.begin(), m_steps.end(), [step](const auto& at) { return !at || *at > step; }));
}

QString TourGuide::textOf(std::size_t note) const {
    QString text = m_tour->notes.at(note).text;
    if (m_steps.at(note)) {
        text.replace(QStringLiteral("{step}"), QString::number(*m_steps.at(note)));
    }
    return text;
}

} // namespace kvscope::gui
