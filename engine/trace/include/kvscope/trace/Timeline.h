// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SeriesDownsampler.h"
#include "kvscope/trace/StepState.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace kvscope::trace {

/// Quantities a chart can plot over steps (Timeline::seriesOf).
enum class SeriesField : std::uint8_t {
    SeqLength,
    StoredTokens, ///< occupancy
    KvLength,
    ResidualTokens,
    QuantizedTokens,
    BytesDeviceFullPrecision, ///< the three memory tiers
    BytesDeviceQuantized,
    BytesHost,
    WallNs, ///< step duration; cache-wide whatever the layer
};

std::string_view toString(SeriesField field);

/// What `field` is in `state` for one layer, or with layer -1 for the whole cache (the memory totals, or
/// the sum over layers); WallNs is the step's whatever the layer. The one mapping seriesOf plots.
double seriesValue(const StepState& state, std::int32_t layer, SeriesField field);

/// All events of a session indexed by step, answering "what did the cache look like after step k"
/// without replaying from the start.
///
/// Storage: one flat vector of events in arrival order, the index of each step's first event, and a
/// full StepState keyframe after every keyframeInterval-th step. stateAt(k) copies the keyframe at or
/// before k and folds the events of at most keyframeInterval - 1 steps through StateReducer. Per-layer
/// lists of event indices let seriesOf read one layer's events without scanning the others.
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

    explicit Timeline(std::int64_t keyframeInterval = kDefaultKeyframeInterval);

    void emit(const Event& event) override;
    /// Avoids regrowing the event vector when the session size is known (replay, benchmarks).
    void reserve(std::size_t events);
    /// Every event in order, with room reserved once (a session file read whole, a live batch).
    void emitAll(std::span<const Event> events);
    void clear();

    std::int64_t stepCount() const { return m_lastStep + 1; }
    std::int32_t layerCount() const { return static_cast<std::int32_t>(m_current.layers.size()); }
    std::size_t eventCount() const { return m_events.size(); }
    std::int64_t keyframeInterval() const { return m_keyframeInterval; }

    std::span<const Event> events() const { return m_events; }
    /// The events filed under that step, in arrival order; empty for a step out of range.
    std::span<const Event> eventsOfStep(std::int64_t step) const;

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
    std::size_t stepBegin(std::int64_t step) const { return m_stepBegin[static_cast<std::size_t>(step)]; }
    std::size_t stepEnd(std::int64_t step) const;
    std::vector<double> layerValues(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                    std::int64_t toStep) const;
    std::vector<std::vector<double>> eachLayerValues(SeriesField field, std::int64_t fromStep,
                                                     std::int64_t toStep) const;
    std::vector<double> cacheValues(SeriesField field, std::int64_t fromStep, std::int64_t toStep) const;

    std::int64_t m_keyframeInterval;
    std::vector<Event> m_events;
    std::vector<std::size_t> m_stepBegin; ///< first event index of each step
    std::vector<StepState> m_keyframes; ///< m_keyframes[j] = state after step j * interval
    StepState m_current; ///< state after the newest event
    std::int64_t m_lastStep = -1;
    std::vector<std::vector<EventIndex>> m_layerEvents; ///< Scope::Layer events, per layer
    std::vector<EventIndex> m_broadcastEvents; ///< Scope::AllLayers events
    std::vector<EventIndex> m_stepEvents; ///< Scope::Step events
    /// Index of the event that made each layer known; a broadcast applies to a layer only after it.
    std::vector<std::size_t> m_layerBirth;
};

} // namespace kvscope::trace
