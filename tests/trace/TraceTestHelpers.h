#pragma once

// Small helpers shared by the trace tests (header-only, nothing to build).

#include "kvscope/trace/Event.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <functional>
#include <span>

namespace kvscope::trace::testing {

inline Event makeEvent(std::int64_t step, std::int32_t layer, EventPayload payload,
                       std::uint64_t sequence = 0) {
    return Event{step, layer, sequence, std::move(payload)};
}

// The obviously correct reference: fold every event from the start, step by step, and hand the
// state after each step to `visit`. Events must be sorted by step (as a generator emits them).
inline void replayFromStart(std::span<const Event> events, std::int64_t stepCount,
                            const std::function<void(const StepState&)>& visit) {
    StepState state;
    std::size_t index = 0;
    for (std::int64_t step = 0; step < stepCount; ++step) {
        StateReducer::beginStep(state, step);
        for (; index < events.size() && events[index].step == step; ++index)
            StateReducer::apply(state, events[index]);
        visit(state);
    }
}

} // namespace kvscope::trace::testing
