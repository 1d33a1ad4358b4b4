// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SessionMetadata.h"

#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// What the engine thread hands the GUI after each step: the step's events (the GUI folds them into its
/// Timeline) and whether the run has finished. Shared read-only across threads.
struct StepBatch {
    std::uint64_t run = 0; ///< which start() it belongs to; batches of an older run are ignored
    std::vector<trace::Event> events;
    trace::SessionMetadata metadata;
    bool finished = false;
};

} // namespace kvscope::gui
