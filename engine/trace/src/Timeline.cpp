// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/Timeline.h"

#include "FileBytes.h"
#include "SessionOverviewFile.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/StateReducer.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace kvscope::trace {

namespace {

bool isCacheWideField(SeriesField field) {
    return field == SeriesField::WallNs;
}

bool isMemoryField(SeriesField field) {
    return field == SeriesField::BytesDeviceFullPrecision || field == SeriesField::BytesDeviceQuantized ||
           field == SeriesField::BytesHost;
}

double layerField(const LayerState& layer, SeriesField field) {
    switch (field) {
    case SeriesField::SeqLength:
        return static_cast<double>(layer.seqLength);
    case SeriesField::StoredTokens:
        return static_cast<double>(layer.storedTokens);
    case SeriesField::KvLength:
        return static_cast<double>(layer.kvLength);
    case SeriesField::ResidualTokens:
        return static_cast<double>(layer.residualTokens);
    case SeriesField::QuantizedTokens:
        return static_cast<double>(layer.quantizedTokens);
    case SeriesField::BytesDeviceFullPrecision:
        return static_cast<double>(layer.bytesDeviceFullPrecision());
    case SeriesField::BytesDeviceQuantized:
        return static_cast<double>(layer.bytesDeviceQuantized);
    case SeriesField::BytesHost:
        return static_cast<double>(layer.bytesHost);
    case SeriesField::WallNs:
        break;
    }
    return 0.0;
}

double cacheField(const StepState& state, SeriesField field) {
    switch (field) {
    case SeriesField::BytesDeviceFullPrecision:
        return static_cast<double>(state.memoryDeviceFullPrecision);
    case SeriesField::BytesDeviceQuantized:
        return static_cast<double>(state.memoryDeviceQuantized);
    case SeriesField::BytesHost:
        return static_cast<double>(state.memoryHost);
    case SeriesField::WallNs:
        return static_cast<double>(state.wallNs);
    default:
        return 0.0;
    }
}

std::vector<SeriesPoint> toPoints(const std::vector<double>& values, std::int64_t fromStep,
                                  std::size_t maxPoints) {
    std::vector<SeriesPoint> points(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        points[i] = SeriesPoint{fromStep + static_cast<std::int64_t>(i), values[i]};
    if (points.size() <= maxPoints)
        return points;
    return SeriesDownsampler::minMax(points, maxPoints);
}

} // namespace

double seriesValue(const StepState& state, std::int32_t layer, SeriesField field) {
    if (isCacheWideField(field)) {
        return cacheField(state, field);
    }
    if (layer >= 0) {
        return static_cast<std::size_t>(layer) < state.layers.size()
                   ? layerField(state.layers[static_cast<std::size_t>(layer)], field)
                   : 0.0;
    }
    if (isMemoryField(field)) {
        return cacheField(state, field);
    }
    double sum = 0.0;
    for (const LayerState& each : state.layers) {
        sum += layerField(each, field);
    }
    return sum;
}

std::string_view toString(SeriesField field) {
    switch (field) {
    case SeriesField::SeqLength:
        return "seq_length";
    case SeriesField::StoredTokens:
        return "stored_tokens";
    case SeriesField::KvLength:
        return "kv_length";
    case SeriesField::ResidualTokens:
        return "residual_tokens";
    case SeriesField::QuantizedTokens:
        return "quantized_tokens";
    case SeriesField::BytesDeviceFullPrecision:
        return "bytes_device_full_precision";
    case SeriesField::BytesDeviceQuantized:
        return "bytes_device_quantized";
    case SeriesField::BytesHost:
        return "bytes_host";
    case SeriesField::WallNs:
        return "wall_ns";
    }
    return "unknown";
}

Timeline::Timeline(std::int64_t keyframeInterval) : m_keyframeInterval(keyframeInterval) {
    if (keyframeInterval < 1)
        throw std::invalid_argument("Timeline: keyframe interval must be at least 1, got " +
                                    std::to_string(keyframeInterval));
}

void Timeline::emit(const Event& event) {
    if (fileBacked())
        throw std::logic_error("Timeline: a file-backed timeline is read-only");
    const std::int64_t step = std::max({event.step, m_lastStep, std::int64_t{0}});
    if (step > m_lastStep)
        openStep(step);

    const std::size_t index = m_events.size();
    if (index >= std::numeric_limits<EventIndex>::max())
        throw std::length_error("Timeline: more events than the per-layer index can address");
    m_events.push_back(event);
    ++m_eventCount;
    if (!m_spans.add(event) && isRetained(event.kind()))
        m_retained.push_back(event);

    switch (StateReducer::scopeOf(event)) {
    case StateReducer::Scope::Step:
        m_stepEvents.push_back(static_cast<EventIndex>(index));
        break;
    case StateReducer::Scope::Layer: {
        const auto layer = static_cast<std::size_t>(event.layer);
        if (layer >= m_layerEvents.size()) {
            m_layerEvents.resize(layer + 1);
            m_layerBirth.resize(layer + 1, index);
        }
        m_layerEvents[layer].push_back(static_cast<EventIndex>(index));
        break;
    }
    case StateReducer::Scope::AllLayers:
        m_broadcastEvents.push_back(static_cast<EventIndex>(index));
        break;
    }

    StateReducer::apply(m_current, event);
}

void Timeline::openStep(std::int64_t step) {
    // The step being left is complete: keep it as a keyframe if it falls on the interval (and in the
    // columns of a file-backed timeline).
    const bool columns = fileBacked();
    const std::size_t begin = columns ? m_chunkOffsets.size() : m_events.size();
    if (m_lastStep >= 0 && m_lastStep % m_keyframeInterval == 0)
        m_keyframes.push_back(m_current);
    if (m_lastStep >= 0 && columns)
        m_columns.record(m_current);
    for (std::int64_t skipped = m_lastStep + 1; skipped < step; ++skipped) {
        m_stepBegin.push_back(begin);
        StateReducer::beginStep(m_current, skipped);
        if (skipped % m_keyframeInterval == 0)
            m_keyframes.push_back(m_current);
        if (columns)
            m_columns.record(m_current);
    }
    m_stepBegin.push_back(begin);
    StateReducer::beginStep(m_current, step);
    m_lastStep = step;
}

void Timeline::reserve(std::size_t events) {
    m_events.reserve(events);
}

void Timeline::emitAll(std::span<const Event> events) {
    // Geometric growth, so that many small live batches do not reallocate on every call.
    const std::size_t needed = m_events.size() + events.size();
    if (needed > m_events.capacity())
        reserve(std::max(needed, 2 * m_events.capacity()));
    for (const Event& event : events)
        emit(event);
}

void Timeline::clear() {
    *this = Timeline(m_keyframeInterval);
}

std::size_t Timeline::stepEnd(std::int64_t step) const {
    return step < m_lastStep ? stepBegin(step + 1) : (fileBacked() ? m_chunkOffsets.size() : m_events.size());
}

StepEvents Timeline::eventsOfStep(std::int64_t step) const {
    if (step < 0 || step > m_lastStep)
        return {};
    const std::size_t begin = stepBegin(step);
    const std::size_t end = stepEnd(step);
    if (!fileBacked())
        return StepEvents(std::span<const Event>(m_events).subspan(begin, end - begin));
    if (begin == end)
        return {};
    return StepEvents(m_cache->get(step, [&] {
        std::vector<Event> events = SessionReader::readStepChunk(*m_file, m_chunkOffsets[begin], m_fileName);
        for (std::size_t chunk = begin + 1; chunk < end; ++chunk) {
            std::vector<Event> more =
                SessionReader::readStepChunk(*m_file, m_chunkOffsets[chunk], m_fileName);
            events.insert(events.end(), std::make_move_iterator(more.begin()),
                          std::make_move_iterator(more.end()));
        }
        return events;
    }));
}

std::vector<Event> Timeline::collectEvents() const {
    if (!fileBacked())
        return m_events;
    RecordingSink sink;
    sink.reserve(m_eventCount);
    replayInto(sink);
    return sink.takeEvents();
}

void Timeline::replayInto(EventSink& sink) const {
    for (std::int64_t step = 0; step <= m_lastStep; ++step) {
        for (const Event& event : eventsOfStep(step))
            sink.emit(event);
    }
}

bool Timeline::isRetained(EventKind kind) {
    switch (kind) {
    case EventKind::Update:
    case EventKind::MaskSizes:
    case EventKind::WindowSlide:
    case EventKind::Memory:
    case EventKind::StepBegin:
    case EventKind::StepEnd:
    case EventKind::Logits:
        return false;
    default:
        return true;
    }
}

Timeline Timeline::openFile(const std::filesystem::path& path, SessionContents& contents,
                            std::size_t cachedSteps, std::int64_t keyframeInterval) {
    Timeline timeline(keyframeInterval);
    timeline.m_file = std::make_shared<const FileBytes>(path);
    timeline.m_fileName = path.string();
    timeline.m_cache = std::make_shared<StepFrameCache>(cachedSteps);
    // A finished 1.6 file holds what the pass below would gather (its Overview chunk): read that instead.
    if (auto opened = SessionOverviewFile::read(*timeline.m_file, timeline.m_fileName, contents);
        opened && opened->overview.keyframeInterval() == keyframeInterval) {
        SessionOverview& overview = opened->overview;
        timeline.m_chunkOffsets = std::move(opened->chunkOffsets);
        // Each step's first chunk, as openStep files them (a step without a chunk begins where the next
        // does).
        timeline.m_stepBegin.reserve(static_cast<std::size_t>(overview.lastStep() + 1));
        std::int64_t filed = -1;
        for (std::size_t chunk = 0; chunk < opened->chunkSteps.size(); ++chunk) {
            for (; filed < opened->chunkSteps[chunk]; ++filed) {
                timeline.m_stepBegin.push_back(chunk);
            }
        }
        timeline.m_lastStep = overview.lastStep();
        timeline.m_eventCount = overview.eventCount();
        timeline.m_keyframes = std::move(overview.keyframes());
        timeline.m_current = std::move(overview.current());
        timeline.m_columns = std::move(overview.columns());
        timeline.m_retained = std::move(overview.retained());
        timeline.m_spans = std::move(overview.spans());
        return timeline;
    }
    contents =
        SessionReader::scan(path, [&timeline](const StepChunkLocation& location, std::vector<Event>& events) {
            timeline.indexChunk(location.offset, location.step, events);
        });
    if (timeline.m_lastStep >= 0)
        timeline.m_columns.record(timeline.m_current); // the last step is complete too
    timeline.m_columns.shrinkToFit();
    timeline.m_retained.shrink_to_fit();
    timeline.m_spans.shrinkToFit();
    return timeline;
}

Timeline Timeline::followFile(const std::filesystem::path& path, std::size_t cachedSteps,
                              std::int64_t keyframeInterval) {
    Timeline timeline(keyframeInterval);
    timeline.m_file = std::make_shared<const FileBytes>(path);
    timeline.m_fileName = path.string();
    timeline.m_cache = std::make_shared<StepFrameCache>(cachedSteps);
    return timeline;
}

void Timeline::appendChunk(const StepChunkLocation& location, std::vector<Event> events) {
    if (!fileBacked())
        throw std::logic_error("Timeline: appendChunk needs a file-backed timeline (followFile)");
    m_file->refreshSize(); // the writer has just put the chunk on disk
    indexChunk(location.offset, location.step, events);
}

void Timeline::indexChunk(std::uint64_t offset, std::int64_t step, std::vector<Event>& events) {
    // A chunk's events are all filed under its step (or the newest one, as emit() files late events).
    step = std::max({step, m_lastStep, std::int64_t{0}});
    if (step > m_lastStep)
        openStep(step);
    m_chunkOffsets.push_back(offset);
    m_eventCount += events.size();
    for (Event& event : events) {
        StateReducer::apply(m_current, event);
        if (!m_spans.add(event) && isRetained(event.kind()))
            m_retained.push_back(std::move(event));
    }
}

StepState Timeline::stateAt(std::int64_t step) const {
    if (step < 0 || step > m_lastStep)
        throw std::out_of_range("Timeline::stateAt: step " + std::to_string(step) + " outside [0, " +
                                std::to_string(stepCount()) + ")");
    if (step == m_lastStep)
        return m_current;
    // step < m_lastStep, so the step at the keyframe boundary below it is complete and stored.
    const std::int64_t keyframe = step / m_keyframeInterval;
    StepState state = m_keyframes[static_cast<std::size_t>(keyframe)];
    for (std::int64_t current = keyframe * m_keyframeInterval + 1; current <= step; ++current) {
        StateReducer::beginStep(state, current);
        for (const Event& event : eventsOfStep(current))
            StateReducer::apply(state, event);
    }
    return state;
}

std::shared_ptr<const StepState> Timeline::snapshotAt(std::int64_t step) const {
    return std::make_shared<const StepState>(stateAt(step));
}

std::vector<SeriesPoint> Timeline::seriesOf(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                            std::int64_t toStep, std::size_t maxPoints) const {
    fromStep = std::max<std::int64_t>(fromStep, 0);
    toStep = std::min(toStep, m_lastStep);
    if (fromStep > toStep || layer < -1 || layer >= layerCount())
        return {};

    std::vector<double> values;
    if (fileBacked()) {
        std::optional<std::vector<double>> held = heldValues(layer, field, fromStep, toStep);
        values = held ? std::move(*held) : foldValues(layer, field, fromStep, toStep);
    } else if (isCacheWideField(field) || (layer == -1 && isMemoryField(field))) {
        values = cacheValues(field, fromStep, toStep);
    } else if (layer >= 0) {
        values = layerValues(layer, field, fromStep, toStep);
    } else {
        values.assign(static_cast<std::size_t>(toStep - fromStep + 1), 0.0);
        for (const std::vector<double>& perLayer : eachLayerValues(field, fromStep, toStep)) {
            for (std::size_t i = 0; i < values.size(); ++i)
                values[i] += perLayer[i];
        }
    }
    return toPoints(values, fromStep, maxPoints);
}

std::vector<std::vector<SeriesPoint>> Timeline::seriesOfEachLayer(SeriesField field, std::int64_t fromStep,
                                                                  std::int64_t toStep,
                                                                  std::size_t maxPoints) const {
    fromStep = std::max<std::int64_t>(fromStep, 0);
    toStep = std::min(toStep, m_lastStep);
    if (fromStep > toStep)
        return {};
    std::vector<std::vector<SeriesPoint>> series;
    if (isCacheWideField(field)) {
        const std::vector<SeriesPoint> shared =
            toPoints(cacheValues(field, fromStep, toStep), fromStep, maxPoints);
        series.assign(static_cast<std::size_t>(layerCount()), shared);
        return series;
    }
    for (const std::vector<double>& values : eachLayerValues(field, fromStep, toStep))
        series.push_back(toPoints(values, fromStep, maxPoints));
    return series;
}

std::optional<std::vector<double>> Timeline::heldValues(std::int32_t layer, SeriesField field,
                                                        std::int64_t fromStep, std::int64_t toStep) const {
    const std::int64_t recorded = m_columns.size();
    if (toStep < recorded || toStep != m_lastStep || recorded != m_lastStep)
        return m_columns.values(layer, field, fromStep, toStep);
    // A growing timeline records a step in its columns when the next one opens: the newest is m_current.
    std::vector<double> values;
    if (fromStep < toStep) {
        std::optional<std::vector<double>> held = m_columns.values(layer, field, fromStep, toStep - 1);
        if (!held)
            return std::nullopt;
        values = std::move(*held);
    }
    values.push_back(seriesValue(m_current, layer, field));
    return values;
}

std::vector<double> Timeline::foldValues(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                         std::int64_t toStep) const {
    StepState state = stateAt(fromStep);
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(toStep - fromStep + 1));
    values.push_back(seriesValue(state, layer, field));
    for (std::int64_t step = fromStep + 1; step <= toStep; ++step) {
        StateReducer::beginStep(state, step);
        for (const Event& event : eventsOfStep(step))
            StateReducer::apply(state, event);
        values.push_back(seriesValue(state, layer, field));
    }
    return values;
}

std::vector<std::vector<double>> Timeline::eachLayerValues(SeriesField field, std::int64_t fromStep,
                                                           std::int64_t toStep) const {
    if (fileBacked()) {
        std::vector<std::vector<double>> values;
        for (std::int32_t layer = 0; layer < layerCount(); ++layer) {
            std::optional<std::vector<double>> held = heldValues(layer, field, fromStep, toStep);
            if (!held)
                break;
            values.push_back(std::move(*held));
        }
        if (values.size() == static_cast<std::size_t>(layerCount()))
            return values;
    }
    // One sequential pass folding whole steps: reading the events in order beats gathering each
    // layer's scattered events layerCount() times.
    StepState state = stateAt(fromStep);
    const auto layers = static_cast<std::size_t>(layerCount());
    std::vector<std::vector<double>> values(layers);
    for (std::vector<double>& perLayer : values)
        perLayer.reserve(static_cast<std::size_t>(toStep - fromStep + 1));
    const auto record = [&] {
        for (std::size_t layer = 0; layer < layers; ++layer)
            values[layer].push_back(layer < state.layers.size() ? layerField(state.layers[layer], field)
                                                                : 0.0);
    };
    record();
    for (std::int64_t step = fromStep + 1; step <= toStep; ++step) {
        StateReducer::beginStep(state, step);
        for (const Event& event : eventsOfStep(step))
            StateReducer::apply(state, event);
        record();
    }
    return values;
}

std::vector<double> Timeline::layerValues(std::int32_t layer, SeriesField field, std::int64_t fromStep,
                                          std::int64_t toStep) const {
    const StepState start = stateAt(fromStep);
    const auto layerIndex = static_cast<std::size_t>(layer);
    LayerState state = layerIndex < start.layers.size() ? start.layers[layerIndex] : LayerState{};
    const std::size_t birth = m_layerBirth[layerIndex];

    // Merge this layer's own events with the broadcasts, both sorted by event index, so the layer
    // sees them in arrival order exactly as StateReducer::apply(StepState&, ...) does.
    const std::vector<EventIndex>& own = m_layerEvents[layerIndex];
    const std::size_t firstIndex = fromStep < m_lastStep ? stepBegin(fromStep + 1) : m_events.size();
    auto ownIt = std::lower_bound(own.begin(), own.end(), firstIndex);
    auto broadcastIt = std::lower_bound(m_broadcastEvents.begin(), m_broadcastEvents.end(), firstIndex);

    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(toStep - fromStep + 1));
    values.push_back(layerField(state, field));
    for (std::int64_t step = fromStep + 1; step <= toStep; ++step) {
        const std::size_t end = stepEnd(step);
        while (true) {
            const std::size_t nextOwn = ownIt != own.end() ? *ownIt : end;
            const std::size_t nextBroadcast = broadcastIt != m_broadcastEvents.end() ? *broadcastIt : end;
            const std::size_t next = std::min(nextOwn, nextBroadcast);
            if (next >= end)
                break;
            if (next == nextOwn) {
                StateReducer::apply(state, m_events[next]);
                ++ownIt;
            } else {
                if (next > birth)
                    StateReducer::apply(state, m_events[next]);
                ++broadcastIt;
            }
        }
        values.push_back(layerField(state, field));
    }
    return values;
}

std::vector<double> Timeline::cacheValues(SeriesField field, std::int64_t fromStep,
                                          std::int64_t toStep) const {
    StepState state = stateAt(fromStep);
    state.layers.clear(); // only step-scope events are folded below
    const std::size_t firstIndex = fromStep < m_lastStep ? stepBegin(fromStep + 1) : m_events.size();
    auto it = std::lower_bound(m_stepEvents.begin(), m_stepEvents.end(), firstIndex);

    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(toStep - fromStep + 1));
    values.push_back(cacheField(state, field));
    for (std::int64_t step = fromStep + 1; step <= toStep; ++step) {
        StateReducer::beginStep(state, step);
        const std::size_t end = stepEnd(step);
        for (; it != m_stepEvents.end() && *it < end; ++it)
            StateReducer::apply(state, m_events[*it]);
        values.push_back(cacheField(state, field));
    }
    return values;
}

std::size_t Timeline::memoryBytes() const {
    std::size_t bytes = sizeof(*this);
    bytes += m_events.capacity() * sizeof(Event);
    bytes += m_stepBegin.capacity() * sizeof(std::size_t);
    for (const StepState& keyframe : m_keyframes)
        bytes += sizeof(StepState) + keyframe.layers.capacity() * sizeof(LayerState);
    bytes += (m_keyframes.capacity() - m_keyframes.size()) * sizeof(StepState);
    for (const std::vector<EventIndex>& list : m_layerEvents)
        bytes += sizeof(list) + list.capacity() * sizeof(EventIndex);
    bytes += (m_broadcastEvents.capacity() + m_stepEvents.capacity()) * sizeof(EventIndex);
    bytes += m_layerBirth.capacity() * sizeof(std::size_t);
    bytes += m_retained.capacity() * sizeof(Event) + m_spans.memoryBytes() + m_chunkOffsets.capacity() * sizeof(std::uint64_t);
    if (fileBacked())
        bytes += m_columns.memoryBytes();
    return bytes;
}

} // namespace kvscope::trace
