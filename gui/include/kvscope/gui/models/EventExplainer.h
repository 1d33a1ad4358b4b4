// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <QString>

namespace kvscope::gui {

/// What an event did and, in one sentence, why the cache did it: the event log's teaching mode.
class EventExplainer {
public:
    /// A short statement of the event's fields ("evicted 1, window [1, 4097)").
    static QString summary(const trace::Event& event);
    /// Why it happened, in the cache's terms; `state` is the cache after the event's step (for the
    /// layer's kind and settings).
    static QString why(const trace::Event& event, const trace::StepState& state);
    /// "12.5 KiB"-style byte counts.
    static QString formatBytes(double bytes);
};

} // namespace kvscope::gui
