// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionSpill.h"

#include <algorithm>
#include <utility>

namespace kvscope::trace {

SessionSpill::SessionSpill(const std::filesystem::path& path, const SessionMetadata& metadata,
                           Timeline& timeline, std::size_t cachedSteps)
    : m_writer(path, metadata, ChunkWriting::CallersThread), m_timeline(timeline) {
    m_timeline = Timeline::followFile(path, cachedSteps);
    // The timeline folds the same keyframes and columns; the file is read back only through it (Save as
    // writes a new file, with its overview).
    m_writer.skipOverview();
    m_writer.setStepChunkListener([this](const StepChunkLocation& location) {
        m_timeline.appendChunk(location, std::move(m_pending));
        m_pending.clear();
    });
}

SessionSpill::~SessionSpill() {
    m_writer.setStepChunkListener({});
}

void SessionSpill::emit(const Event& event) {
    // Filed as the writer and the timeline file it: a late event belongs to the newest step.
    const std::int64_t step = std::max({event.step, m_step, std::int64_t{0}});
    if (step > m_step) {
        // The step before is complete: write it now, so that a chunk never holds two steps' events
        // (the listener hands m_pending over whole).
        m_writer.flushStep();
        m_step = step;
    }
    m_pending.push_back(event);
    m_writer.emit(event); // a StepEnd writes the chunk, and m_pending goes to the timeline with it
}

void SessionSpill::flush() {
    m_writer.flushStep();
}

void SessionSpill::finish() {
    m_writer.finish();
}

} // namespace kvscope::trace
