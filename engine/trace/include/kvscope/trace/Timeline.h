// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SeriesColumns.h"
#include "kvscope/trace/SeriesDownsampler.h"
#include "kvscope/trace/SeriesField.h"
#include "kvscope/trace/StepChunkLocation.h"
#include "kvscope/trace/StepEvents.h"
#include "kvscope/trace/StepFrameCache.h"
#include "kvscope/trace/StepState.h"
#include "kvscope/trace/TimedSpans.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::trace {

class FileBytes;
struct SessionContents;

/// All events of a session indexed by step, answering "what did the cache look like after step k"
/// without replaying from the start.
///
/// Storage: one flat vector of events in arrival order, the index of each step's first event, and a
/// full StepState keyframe after every keyframeInterval-th step. stateAt(k) copies the keyframe at or
/// before k and folds the events of at most keyframeInterval - 1 steps through StateReducer. Per-layer
/// lists of event indices let seriesOf read one layer's events without scanning the others.
///
/// File-backed (openFile): the events stay in the session file. Opening reads every step chunk once, keeping
/// only where each step's chunks lie (16 bytes a chunk), the keyframes, compact columns of the charted
/// values (SeriesColumns) and the few events views scan across the whole session (retainedEvents);
/// eventsOfStep decodes a step's chunks on demand through a bounded StepFrameCache. Memory is then set by
/// the layers and the keyframes, not by the events: a 32-layer, 131072-step session holds ~100 MB.
///
/// Events must arrive in step order (the generator's order); an event older than the latest step is
/// filed under the latest step. Steps need not be dense: a skipped step has no events and the state
/// of the step before it. Not synchronised: write and read on one thread, or lock around it, and
/// hand other threads snapshots (snapshotAt).
class Timeline final : public EventSink {
public:
    /// At 32 layers x 32768 steps (2.3M events, ~240 MiB of them) 32 gives stateAt ~0.02 ms median,
    /// ~0.1 ms worst, for ~6 MiB of keyframes; 256 would cost ~0.2 ms median for 5 MiB less.
    static constexpr std::int64_t kDefaultKeyframeInterval = 32;

    /// Decoded steps a file-backed timeline keeps (a few MB at 80 layers): scrubbing back and forth over a
    /// screenful of steps decodes each once.
    static constexpr std::size_t kDefaultCachedSteps = 512;

    explicit Timeline(std::int64_t keyframeInterval = kDefaultKeyframeInterval);

    /// A file-backed timeline of a session file, read once chunk by chunk (SessionReader::scan): `contents`
    /// gets the metadata and, for a damaged file, what is damaged (the timeline then holds the intact steps).
    /// SessionError when the file cannot be opened or its header is damaged.
    static Timeline openFile(const std::filesystem::path& path, SessionContents& contents,
                             std::size_t cachedSteps = kDefaultCachedSteps,
                             std::int64_t keyframeInterval = kDefaultKeyframeInterval);
    /// A file-backed timeline of a session file still being written (a live session, SessionSpill): empty
    /// until appendChunk files each step chunk the writer has put on disk. SessionError when the file cannot
    /// be opened.
    static Timeline followFile(const std::filesystem::path& path,
                               std::size_t cachedSteps = kDefaultCachedSteps,
                               std::int64_t keyframeInterval = kDefaultKeyframeInterval);
    /// Files the step chunk the writer wrote at `location`, holding `events` (kept only where isRetained):
    /// the file-backed counterpart of emit(). std::logic_error on a timeline that is not file-backed.
    void appendChunk(const StepChunkLocation& location, std::vector<Event> events);
    bool fileBacked() const { return m_file != nullptr; }
    /// The decoded-frame cache of a file-backed timeline; null otherwise.
    const StepFrameCache* frameCache() const { return m_cache.get(); }

    /// std::logic_error on a file-backed timeline (it is read-only).
    void emit(const Event& event) override;
    /// Avoids regrowing the event vector when the session size is known (replay, benchmarks).
    void reserve(std::size_t events);
    /// Every event in order, with room reserved once (a session file read whole, a live batch).
    void emitAll(std::span<const Event> events);
    void clear();

    std::int64_t stepCount() const { return m_lastStep + 1; }
    std::int32_t layerCount() const { return static_cast<std::int32_t>(m_current.layers.size()); }
    std::size_t eventCount() const { return m_eventCount; }
    std::int64_t keyframeInterval() const { return m_keyframeInterval; }

    /// Every event, in memory; empty for a file-backed timeline (use eventsOfStep, retainedEvents or
    /// collectEvents there).
    std::span<const Event> events() const { return m_events; }
    /// Every event in order, decoding a file-backed timeline's frames (exporting).
    std::vector<Event> collectEvents() const;
    /// Every event in order to `sink`, one step's frame at a time: saving a file-backed session holds one
    /// step, not the session.
    void replayInto(EventSink& sink) const;
    /// The events filed under that step, in arrival order; empty for a step out of range. A file-backed
    /// timeline decodes them (cached); SessionError when the file no longer reads back there.
    StepEvents eventsOfStep(std::int64_t step) const;
    /// The events of the kinds isRetained names, in order, in both kinds of timeline: what views scan
    /// across a whole session (flushes, presses, paged serving, resets and batch operations), but for the
    /// transfers and compute spans, which timedSpans() keeps compactly.
    std::span<const Event> retainedEvents() const { return m_retained; }
    /// Every transfer and compute span, in order: what the Transfers view draws.
    const TimedSpans& timedSpans() const { return m_spans; }
    /// Everything but the per-step bulk (update, mask sizes, window slide, memory, step begin/end, logits).
    static bool isRetained(EventKind kind);

    /// State after all events of steps 0..step. Throws std::out_of_range unless 0 <= step < stepCount().
    StepState stateAt(std::int64_t step) const;
    std::shared_ptr<const StepState> snapshotAt(std::int64_t step) const;
    /// State after the newest event (the live tail); empty before the first event.
    const StepState& latestState() const { return m_current; }

    /// Value of field at the end of every step in [fromStep, toStep] (clamped to the session),
    /// downsampled to at most maxPoints keeping peaks. layer -1 gives cache-wide values: token
    /// fields summed over layers, memory fields from the cache-wide Memory events. Empty when the
    /// range or the layer is out of the session.
    std::vector<SeriesPoint> seriesOf(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                      std::int64_t toStep, std::size_t maxPoints) const;

    /// seriesOf for every layer at once (index = layer), in one pass over the range's events:
    /// cheaper than layerCount() separate calls when a view shows all layers (a heatmap).
    std::vector<std::vector<SeriesPoint>> seriesOfEachLayer(SeriesField field, std::int64_t fromStep,
                                                            std::int64_t toStep, std::size_t maxPoints) const;

    /// Bytes held by the timeline's own containers (payload strings/vectors beyond their inline
    /// storage are not counted).
    std::size_t memoryBytes() const;

private:
    using EventIndex = std::uint32_t;

    void openStep(std::int64_t step);
    void indexChunk(std::uint64_t offset, std::int64_t step, std::vector<Event>& events);
    /// A file-backed timeline's values from its columns, the newest step from m_current while the
    /// timeline still grows (its columns then end a step short); nullopt when the columns do not hold them.
    std::optional<std::vector<double>> heldValues(std::int32_t layer, SeriesField field,
                                                  std::int64_t fromStep, std::int64_t toStep) const;
    std::size_t stepBegin(std::int64_t step) const { return m_stepBegin[static_cast<std::size_t>(step)]; }
    std::size_t stepEnd(std::int64_t step) const;
    /// A file-backed timeline's values by folding frames (what its columns do not hold).
    std::vector<double> foldValues(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                   std::int64_t toStep) const;
    std::vector<double> layerValues(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                    std::int64_t toStep) const;
    std::vector<std::vector<double>> eachLayerValues(SeriesField field, std::int64_t fromStep,
                                                     std::int64_t toStep) const;
    std::vector<double> cacheValues(SeriesField field, std::int64_t fromStep, std::int64_t toStep) const;

    std::int64_t m_keyframeInterval;
    std::vector<Event> m_events;
    std::size_t m_eventCount = 0;
    /// First event index of each step; for a file-backed timeline, its first chunk's index in m_chunkOffsets
    std::vector<std::size_t> m_stepBegin;
    std::vector<Event> m_retained; ///< isRetained events but transfers and compute spans
    TimedSpans m_spans;
    // File-backed only.
    std::shared_ptr<const FileBytes> m_file;
    std::string m_fileName;
    std::vector<std::uint64_t> m_chunkOffsets; ///< every step chunk, in file order
    std::shared_ptr<StepFrameCache> m_cache;
    SeriesColumns m_columns;
    std::vector<StepState> m_keyframes; ///< m_keyframes[j] = state after step j * interval
    StepState m_current;                ///< state after the newest event
    std::int64_t m_lastStep = -1;
    std::vector<std::vector<EventIndex>> m_layerEvents; ///< Scope::Layer events, per layer
    std::vector<EventIndex> m_broadcastEvents;          ///< Scope::AllLayers events
    std::vector<EventIndex> m_stepEvents;               ///< Scope::Step events
    /// Index of the event that made each layer known; a broadcast applies to a layer only after it.
    std::vector<std::size_t> m_layerBirth;
};

} // namespace kvscope::trace
