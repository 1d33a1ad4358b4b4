// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/tours/Tour.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::trace {
class Timeline;
}

namespace kvscope::gui {

/// Follows a tour over its session: the step at which each note's trigger happened, read from the
/// session's events as they arrive (a live session grows), and the notes that apply at a step.
class TourGuide {
public:
    /// Starts over with `tour` (null: no tour). The tour must outlive the guide's use of it.
    void setTour(const Tour* tour);
    const Tour* tour() const { return m_tour; }
    /// Reads the steps the timeline gained since the last call; `finished` when no step will follow
    /// (a replayed file, or a live run that ended), which fixes "last".
    void update(const trace::Timeline& timeline, bool finished);
    /// The step each note applies from, in the tour's order; nullopt while its trigger has not happened.
    const std::vector<std::optional<std::int64_t>>& triggerSteps() const { return m_steps; }
    /// The notes that apply at `step` (trigger at or before it), by trigger step, ties in the tour's order.
    std::vector<std::size_t> notesAt(std::int64_t step) const;
    /// How many notes have not happened by `step`.
    std::size_t notesAfter(std::int64_t step) const;
    /// The note's text with "{step}" replaced by the step it applies from.
    QString textOf(std::size_t note) const;

private:
    const Tour* m_tour = nullptr;
    std::vector<std::optional<std::int64_t>> m_steps;
    /// The first step not read to its end: the last step is read again, its events may still be arriving.
    std::int64_t m_nextStep = 0;
};

} // namespace kvscope::gui
