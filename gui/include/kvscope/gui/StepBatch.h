#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kvscope::gui {

// What the engine thread hands the GUI after each step: the step's events, the cache state after it
// (an immutable snapshot), and where the run stands. Shared read-only across threads.
struct StepBatch {
    std::uint64_t run = 0; // which start() it belongs to; batches of an older run are ignored
    std::vector<trace::Event> events;
    std::shared_ptr<const trace::StepState> state;
    trace::SessionMetadata metadata;
    std::int64_t generated = 0;
    bool finished = false;
};

} // namespace kvscope::gui
