// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/PerfettoExport.h"

#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/StepState.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

namespace kvscope::trace {

namespace {

using Json = nlohmann::json;

// Lanes (Chrome "threads"). Process 1 is the host's clock, process 2 the device's streams.
constexpr int kHostProcess = 1;
constexpr int kDeviceProcess = 2;
constexpr int kStepsLane = 1;
constexpr int kPrefetchLane = 2;
constexpr int kComputeStreamCopiesLane = 3;
constexpr int kQuantizeLane = 4;
constexpr int kCacheLane = 5;
constexpr int kFirstLayerLane = 100;
// Serving sessions: process 3 holds one lane per request, in arrival order.
constexpr int kServingProcess = 3;
constexpr int kFirstRequestLane = 1;

// Untimed sessions (no Compute/Transfer events, no wall time) place steps 1 ms apart, so that
// step-indexed views stay readable; args.step keeps the exact mapping either way.
constexpr double kNominalStepUs = 1000.0;

double micros(std::int64_t ns) { return static_cast<double>(std::max<std::int64_t>(ns, 0)) / 1000.0; }

std::string layerName(std::int32_t layer) {
    char name[16];
    std::snprintf(name, sizeof name, "L%02d", layer);
    return name;
}

// Writes trace events one per line, comma-separated, into the traceEvents array.
class EventStream {
public:
    explicit EventStream(std::ostream& out) : m_out(out) {}
    void add(const Json& event) {
        m_out << (m_first ? "\n" : ",\n") << event.dump(-1, ' ', false, Json::error_handler_t::replace);
        m_first = false;
    }

private:
    std::ostream& m_out;
    bool m_first = true;
};

Json args(std::int64_t step, std::int32_t layer) { return Json{{"step", step}, {"layer", layer}}; }

struct StepSpan {
    double beginUs = 0;
    double endUs = 0;
};

// Per-step spans on one clock: the union of the step's timed work when the session has any
// (so device lanes line up with steps), else cumulative wall time, else 1 ms per step.
std::vector<StepSpan> stepSpans(std::span<const Event> events, std::int64_t steps, bool timed) {
    std::vector<StepSpan> spans(static_cast<std::size_t>(steps));
    std::vector<std::int64_t> wall(static_cast<std::size_t>(steps), 0);
    std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>> work(static_cast<std::size_t>(steps));
    std::int64_t filed = 0;
    for (const Event& event : events) {
        filed = std::max(filed, event.step);
        auto& range = work[static_cast<std::size_t>(filed)];
        auto extend = [&](std::int64_t begin, std::int64_t end) {
            range = range ? std::pair{std::min(range->first, begin), std::max(range->second, end)} : std::pair{begin, end};
        };
        if (const auto* compute = std::get_if<ComputeEvent>(&event.payload)) {
            extend(compute->beginNs, compute->endNs);
        } else if (const auto* transfer = std::get_if<TransferEvent>(&event.payload)) {
            extend(transfer->beginNs, transfer->endNs);
        } else if (const auto* end = std::get_if<StepEndEvent>(&event.payload)) {
            wall[static_cast<std::size_t>(filed)] = end->wallNs;
        }
    }
    const bool hasWall = std::any_of(wall.begin(), wall.end(), [](std::int64_t ns) { return ns > 0; });
    double clock = 0;
    for (std::size_t step = 0; step < spans.size(); ++step) {
        StepSpan& span = spans[step];
        if (timed && work[step]) {
            span.beginUs = std::max(clock, micros(work[step]->first));
            span.endUs = std::max(span.beginUs, micros(work[step]->second));
        } else {
            span.beginUs = clock;
            span.endUs = clock + (hasWall ? micros(wall[step]) : kNominalStepUs);
        }
        clock = span.endUs;
    }
    return spans;
}

// Emits complete slices, or async begin/end pairs where a slice would overlap the lane's
// previous one (Perfetto requires slices on one thread track to nest).
class LaneWriter {
public:
    explicit LaneWriter(EventStream& stream) : m_stream(stream) {}

    // Returns true when written as a complete ("X") slice that flows can bind to.
    bool slice(int lane, const std::string& name, const char* category, double beginUs, double endUs, Json sliceArgs) {
        double& laneEnd = m_laneEnd[lane];
        const double duration = std::max(endUs - beginUs, 0.0);
        if (beginUs >= laneEnd) {
            laneEnd = beginUs + duration;
            m_stream.add(Json{{"ph", "X"}, {"pid", kDeviceProcess}, {"tid", lane}, {"name", name},
                              {"cat", category}, {"ts", beginUs}, {"dur", duration}, {"args", std::move(sliceArgs)}});
            return true;
        }
        const std::string id = std::string(category) + "-" + std::to_string(++m_asyncIds);
        m_stream.add(Json{{"ph", "b"}, {"pid", kDeviceProcess}, {"tid", lane}, {"name", name}, {"cat", category},
                          {"id", id}, {"ts", beginUs}, {"args", sliceArgs}});
        m_stream.add(Json{{"ph", "e"}, {"pid", kDeviceProcess}, {"tid", lane}, {"name", name}, {"cat", category},
                          {"id", id}, {"ts", beginUs + duration}, {"args", std::move(sliceArgs)}});
        return false;
    }

private:
    EventStream& m_stream;
    std::map<int, double> m_laneEnd;
    std::int64_t m_asyncIds = 0;
};

// Flow arrows offload -> prefetch -> use, per layer: each offload opens a chain, the layer's next
// prefetch continues it and its next compute slice ends it.
class FlowTracker {
public:
    explicit FlowTracker(EventStream& stream) : m_stream(stream) {}

    void offload(std::int32_t layer, int lane, double ts, std::int64_t step) {
        const std::int64_t id = ++m_ids;
        m_open[layer] = id;
        add("s", id, lane, ts, step, layer);
    }
    void prefetch(std::int32_t layer, int lane, double ts, std::int64_t step) {
        if (const auto found = m_open.find(layer); found != m_open.end()) {
            add("t", found->second, lane, ts, step, layer);
            m_prefetched[layer] = found->second;
            m_open.erase(found);
        }
    }
    void use(std::int32_t layer, int lane, double ts, std::int64_t step) {
        if (const auto found = m_prefetched.find(layer); found != m_prefetched.end()) {
            Json event = flow("f", found->second, lane, ts, step, layer);
            event["bp"] = "e";
            m_stream.add(event);
            m_prefetched.erase(found);
        }
    }

private:
    static Json flow(const char* phase, std::int64_t id, int lane, double ts, std::int64_t step, std::int32_t layer) {
        return Json{{"ph", phase}, {"pid", kDeviceProcess}, {"tid", lane}, {"name", "offload->prefetch->use"},
                    {"cat", "kv_flow"}, {"id", id}, {"ts", ts}, {"args", args(step, layer)}};
    }
    void add(const char* phase, std::int64_t id, int lane, double ts, std::int64_t step, std::int32_t layer) {
        m_stream.add(flow(phase, id, lane, ts, step, layer));
    }

    EventStream& m_stream;
    std::int64_t m_ids = 0;
    std::map<std::int32_t, std::int64_t> m_open;
    std::map<std::int32_t, std::int64_t> m_prefetched;
};

Json layerCounter(const char* name, const StepState& state, double ts, std::int64_t (*field)(const LayerState&),
                  bool slidingOnly) {
    Json values = Json::object();
    for (std::size_t layer = 0; layer < state.layers.size(); ++layer) {
        const LayerState& layerState = state.layers[layer];
        if (!layerState.initialized || (slidingOnly && !isSlidingWindow(layerState.kind))) {
            continue;
        }
        values[layerName(static_cast<std::int32_t>(layer))] = field(layerState);
    }
    return Json{{"ph", "C"}, {"pid", kDeviceProcess}, {"name", name}, {"ts", ts}, {"args", std::move(values)}};
}

void writeCounters(EventStream& stream, const StepState& state, double ts) {
    stream.add(layerCounter("occupancy (stored tokens)", state, ts, [](const LayerState& l) { return l.storedTokens; },
                            false));
    stream.add(layerCounter("kv_length", state, ts, [](const LayerState& l) { return l.kvLength; }, false));
    const bool sliding = std::any_of(state.layers.begin(), state.layers.end(), [](const LayerState& l) {
        return l.initialized && isSlidingWindow(l.kind);
    });
    if (sliding) {
        stream.add(layerCounter("window start", state, ts, [](const LayerState& l) { return l.windowStart; }, true));
    }
    stream.add(Json{{"ph", "C"},
                    {"pid", kDeviceProcess},
                    {"name", "memory (bytes)"},
                    {"ts", ts},
                    {"args",
                     {{"device_full_precision", state.memoryDeviceFullPrecision},
                      {"device_quantized", state.memoryDeviceQuantized},
                      {"host", state.memoryHost}}}});
}

Json laneName(int pid, int tid, const std::string& name) {
    return Json{{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}};
}

Json laneOrder(int pid, int tid, int index) {
    return Json{{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", index}}}};
}

// The export of one step as it reads the step's events: the lanes and trackers a row writes to, and what it
// gathers for the step's slice and counters.
struct ExportStep {
    EventStream& stream;
    LaneWriter& laneWriter;
    FlowTracker& flows;
    const std::map<std::string, int>& requestLanes;
    // Per layer a cache press compressed: tokens its last compression kept, and all it dropped so far.
    std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>>& pressed;
    std::int64_t step = 0;
    StepSpan span;
    Json stepArgs;
};

// An untimed cache operation: an instant on the cache lane, named in a few words.
void cacheInstant(ExportStep& at, const std::string& name, Json detail) {
    at.stream.add(Json{{"ph", "i"}, {"s", "t"}, {"pid", kDeviceProcess}, {"tid", kCacheLane}, {"name", name},
                       {"cat", "cache"}, {"ts", at.span.beginUs}, {"args", std::move(detail)}});
}

// A request's admission, preemption or end: an instant on its lane.
void requestInstant(ExportStep& at, const std::string& id, const std::string& what, Json detail) {
    if (const auto lane = at.requestLanes.find(id); lane != at.requestLanes.end()) {
        at.stream.add(Json{{"ph", "i"}, {"s", "t"}, {"pid", kServingProcess}, {"tid", lane->second},
                           {"name", what}, {"cat", "serving"}, {"ts", at.span.beginUs}, {"args", std::move(detail)}});
    }
}

// How each kind of event appears in the trace, one row per kind (as EventFields describes each record once):
// a slice on a lane, an instant, a flow, the step's own arguments. A kind with no row shows only through the
// counters its state feeds (updates, memory, the pool).
template <typename Payload> struct PerfettoRow {};

template <> struct PerfettoRow<ComputeEvent> {
    static void add(const ComputeEvent& compute, const Event& event, ExportStep& at) {
        const int lane = kFirstLayerLane + event.layer;
        Json sliceArgs = args(at.step, event.layer);
        sliceArgs["timing"] = toString(compute.timing);
        if (at.laneWriter.slice(lane, layerName(event.layer) + " update", "compute", micros(compute.beginNs),
                                micros(compute.endNs), std::move(sliceArgs))) {
            at.flows.use(event.layer, lane, micros(compute.beginNs), at.step);
        }
    }
};

template <> struct PerfettoRow<TransferEvent> {
    static void add(const TransferEvent& transfer, const Event& event, ExportStep& at) {
        const int lane = transfer.lane == TransferLane::Prefetch ? kPrefetchLane : kComputeStreamCopiesLane;
        Json sliceArgs = args(at.step, event.layer);
        sliceArgs["bytes"] = transfer.bytes;
        sliceArgs["timing"] = toString(transfer.timing);
        sliceArgs["lane"] = toString(transfer.lane);
        const bool offload = transfer.direction == TransferDirection::Offload;
        const bool bound = at.laneWriter.slice(
            lane, std::string(offload ? "offload " : "prefetch ") + layerName(event.layer),
            offload ? "offload" : "prefetch", micros(transfer.beginNs), micros(transfer.endNs), std::move(sliceArgs));
        if (bound && offload) {
            at.flows.offload(event.layer, lane, micros(transfer.beginNs), at.step);
        } else if (bound) {
            at.flows.prefetch(event.layer, lane, micros(transfer.beginNs), at.step);
        }
    }
};

template <> struct PerfettoRow<QuantizeFlushEvent> {
    static void add(const QuantizeFlushEvent& flush, const Event& event, ExportStep& at) {
        Json detail = args(at.step, event.layer);
        detail["tokens_moved"] = flush.tokensMoved;
        detail["quantized_tokens_after"] = flush.quantizedTokensAfter;
        detail["bytes_before"] = flush.bytesBefore;
        detail["bytes_after"] = flush.bytesAfter;
        detail["max_abs_error"] = flush.maxAbsError;
        detail["relative_error"] = flush.relativeError;
        at.stream.add(Json{{"ph", "i"}, {"s", "t"}, {"pid", kDeviceProcess}, {"tid", kQuantizeLane},
                           {"name", "flush " + layerName(event.layer)}, {"cat", "quantize"},
                           {"ts", at.span.beginUs}, {"args", std::move(detail)}});
    }
};

template <> struct PerfettoRow<WindowSlideEvent> {
    static void add(const WindowSlideEvent& slide, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["evicted"] = slide.positionsEvicted;
        detail["window_start"] = slide.windowStart;
        detail["window_end"] = slide.windowEnd;
        detail["window_size"] = slide.windowSize;
        cacheInstant(at, "window slide " + layerName(event.layer), std::move(detail));
    }
};

template <> struct PerfettoRow<CropEvent> {
    static void add(const CropEvent& crop, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["max_length"] = crop.maxLength;
        detail["seq_length_before"] = crop.seqLengthBefore;
        detail["seq_length_after"] = crop.seqLengthAfter;
        cacheInstant(at, "crop", std::move(detail));
    }
};

template <> struct PerfettoRow<SpeculationEvent> {
    static void add(const SpeculationEvent& speculation, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["source"] = toString(speculation.source);
        detail["first_position"] = speculation.firstPosition;
        detail["drafted"] = speculation.drafted();
        detail["accepted"] = speculation.accepted;
        detail["rolled_back"] = speculation.drafted() - speculation.accepted;
        cacheInstant(at,
                     "speculation: " + std::to_string(speculation.accepted) + " of " +
                         std::to_string(speculation.drafted()) + " drafts kept",
                     std::move(detail));
    }
};

template <> struct PerfettoRow<ReorderEvent> {
    static void add(const ReorderEvent& reorder, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["beam_indices"] = reorder.beamIndices;
        cacheInstant(at, "reorder beams", std::move(detail));
    }
};

template <> struct PerfettoRow<BatchRepeatEvent> {
    static void add(const BatchRepeatEvent& repeat, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["repeats"] = repeat.repeats;
        detail["batch_after"] = repeat.batchAfter;
        cacheInstant(at, "batch repeat", std::move(detail));
    }
};

template <> struct PerfettoRow<BatchSelectEvent> {
    static void add(const BatchSelectEvent& select, const Event& event, ExportStep& at) {
        Json detail = args(event.step, event.layer);
        detail["indices"] = select.indices;
        detail["batch_after"] = select.batchAfter;
        cacheInstant(at, "batch select", std::move(detail));
    }
};

template <> struct PerfettoRow<ResetEvent> {
    static void add(const ResetEvent&, const Event& event, ExportStep& at) {
        cacheInstant(at, "reset", args(event.step, event.layer));
    }
};

template <> struct PerfettoRow<CompressionEvent> {
    static void add(const CompressionEvent& compression, const Event& event, ExportStep& at) {
        auto& [kept, dropped] = at.pressed[event.layer];
        kept = compression.lengthAfter;
        dropped += compression.lengthBefore - compression.lengthAfter;
        Json detail = args(event.step, event.layer);
        detail["length_before"] = compression.lengthBefore;
        detail["length_after"] = compression.lengthAfter;
        detail["heads"] = compression.heads;
        detail["dropped"] = compression.droppedCount;
        cacheInstant(at, "compression " + layerName(event.layer), std::move(detail));
    }
};

template <> struct PerfettoRow<RequestScheduledEvent> {
    static void add(const RequestScheduledEvent& scheduled, const Event&, ExportStep& at) {
        const auto lane = at.requestLanes.find(scheduled.requestId);
        if (lane == at.requestLanes.end()) {
            return;
        }
        Json detail = args(at.step, -1);
        detail["first_position"] = scheduled.firstPosition;
        detail["tokens"] = scheduled.numTokens;
        detail["samples"] = scheduled.samples;
        const std::string what =
            scheduled.numTokens == 1 ? "decode " + std::to_string(scheduled.firstPosition)
                                     : "prefill " + std::to_string(scheduled.firstPosition) + "-" +
                                           std::to_string(scheduled.firstPosition + scheduled.numTokens - 1);
        at.stream.add(Json{{"ph", "X"}, {"pid", kServingProcess}, {"tid", lane->second}, {"name", what},
                           {"cat", "serving"}, {"ts", at.span.beginUs}, {"dur", at.span.endUs - at.span.beginUs},
                           {"args", std::move(detail)}});
    }
};

template <> struct PerfettoRow<RequestPreemptedEvent> {
    static void add(const RequestPreemptedEvent& preempted, const Event&, ExportStep& at) {
        Json detail = args(at.step, -1);
        detail["computed_tokens_lost"] = preempted.numComputedTokens;
        requestInstant(at, preempted.requestId, "preempted", std::move(detail));
    }
};

template <> struct PerfettoRow<RequestFinishedEvent> {
    static void add(const RequestFinishedEvent& finished, const Event&, ExportStep& at) {
        Json detail = args(at.step, -1);
        detail["reason"] = toString(finished.reason);
        detail["output_tokens"] = finished.outputTokens;
        requestInstant(at, finished.requestId, "finished", std::move(detail));
    }
};

template <> struct PerfettoRow<RequestAdmittedEvent> {
    static void add(const RequestAdmittedEvent& admitted, const Event&, ExportStep& at) {
        Json detail = args(at.step, -1);
        detail["tokens"] = admitted.numTokens;
        detail["cached_tokens"] = admitted.cachedTokens;
        requestInstant(at, admitted.requestId, admitted.resumed ? "resumed" : "admitted", std::move(detail));
    }
};

template <> struct PerfettoRow<StepBeginEvent> {
    static void add(const StepBeginEvent& begin, const Event&, ExportStep& at) {
        at.stepArgs["input_token_id"] = begin.tokenId;
        at.stepArgs["input"] = begin.text;
    }
};

template <> struct PerfettoRow<StepEndEvent> {
    static void add(const StepEndEvent& end, const Event&, ExportStep& at) {
        at.stepArgs["token_id"] = end.tokenId;
        at.stepArgs["token"] = end.text;
        at.stepArgs["wall_ns"] = end.wallNs;
    }
};

// The session's header: its metadata and how its times were taken.
void writePerfettoHeader(std::ostream& out, const SessionMetadata& metadata, const std::string& timing) {
    out << "{\"displayTimeUnit\":\"ns\",\"schemaVersion\":1,\"otherData\":"
        << Json{{"kvscope_format", FormatVersion{}.toString()},
                {"kvscope_version", metadata.kvscopeVersion},
                {"model", metadata.model},
                {"cache", metadata.cacheKind},
                {"device", metadata.device},
                {"prompt", metadata.prompt},
                {"seed", std::to_string(metadata.seed)},
                {"timing", timing}}
               .dump(-1, ' ', false, Json::error_handler_t::replace)
        << ",\"traceEvents\":[";
}

// The processes and their lanes: the steps, one compute lane per layer, the copy, quantize and cache lanes,
// and for a serving session one lane per request (in arrival order), which it returns.
std::map<std::string, int> writePerfettoLanes(EventStream& stream, std::span<const Event> events, std::int32_t layers,
                                      const std::string& device, const std::string& timing) {
    stream.add(Json{{"ph", "M"}, {"pid", kHostProcess}, {"name", "process_name"}, {"args", {{"name", "kvscope host"}}}});
    stream.add(Json{{"ph", "M"},
                    {"pid", kDeviceProcess},
                    {"name", "process_name"},
                    {"args", {{"name", "device " + device + " (" + timing + " times)"}}}});
    stream.add(laneName(kHostProcess, kStepsLane, "decode steps"));
    const std::vector<std::pair<int, std::string>> lanes{
        {kPrefetchLane, "prefetch stream (host to device)"},
        {kComputeStreamCopiesLane, "offload (compute stream)"},
        {kQuantizeLane, "quantize"},
        {kCacheLane, "cache operations"},
    };
    int order = 0;
    for (std::int32_t layer = 0; layer < layers; ++layer) {
        stream.add(laneName(kDeviceProcess, kFirstLayerLane + layer, "compute " + layerName(layer)));
        stream.add(laneOrder(kDeviceProcess, kFirstLayerLane + layer, order++));
    }
    for (const auto& [lane, name] : lanes) {
        stream.add(laneName(kDeviceProcess, lane, name));
        stream.add(laneOrder(kDeviceProcess, lane, order++));
    }
    std::map<std::string, int> requestLanes;
    bool serving = false;
    for (const Event& event : events) {
        if (const auto* arrived = std::get_if<RequestArrivedEvent>(&event.payload)) {
            if (!requestLanes.contains(arrived->requestId)) {
                const int lane = kFirstRequestLane + static_cast<int>(requestLanes.size());
                requestLanes.emplace(arrived->requestId, lane);
            }
        }
        serving = serving || event.kind() == EventKind::PagedPool;
    }
    if (serving) {
        stream.add(Json{{"ph", "M"}, {"pid", kServingProcess}, {"name", "process_name"},
                        {"args", {{"name", "serving requests (paged KV cache)"}}}});
        for (const auto& [id, lane] : requestLanes) {
            stream.add(laneName(kServingProcess, lane, "request " + id));
            stream.add(laneOrder(kServingProcess, lane, lane));
        }
    }
    return requestLanes;
}

// The end of a step: its slice on the steps lane, then the cache's, the pool's and the press's counters.
void writePerfettoStepEnd(ExportStep& at, const StepState& state) {
    EventStream& stream = at.stream;
    const StepSpan& span = at.span;
    stream.add(Json{{"ph", "X"},
                    {"pid", kHostProcess},
                    {"tid", kStepsLane},
                    {"name", at.step == 0 ? std::string("prefill") : "step " + std::to_string(at.step)},
                    {"cat", "step"},
                    {"ts", span.beginUs},
                    {"dur", span.endUs - span.beginUs},
                    {"args", std::move(at.stepArgs)}});
    writeCounters(stream, state, span.endUs);
    if (state.paged.active) {
        const PagedState& pool = state.paged;
        const auto usable = pool.numBlocks - (pool.nullBlock >= 0 ? 1 : 0);
        stream.add(Json{{"ph", "C"}, {"pid", kServingProcess}, {"name", "pool: blocks"}, {"ts", span.endUs},
                        {"args", {{"held", usable - static_cast<std::int64_t>(pool.freeQueue.size())},
                                  {"free", static_cast<std::int64_t>(pool.freeQueue.size())}}}});
        stream.add(Json{{"ph", "C"}, {"pid", kServingProcess}, {"name", "prefix hit rate (%, cumulative)"},
                        {"ts", span.endUs},
                        {"args", {{"hit rate", pool.queryTokens > 0 ? 100.0 * static_cast<double>(pool.hitTokens) /
                                                                           static_cast<double>(pool.queryTokens)
                                                                     : 0.0}}}});
        stream.add(Json{{"ph", "C"}, {"pid", kServingProcess}, {"name", "evictions and preemptions (total)"},
                        {"ts", span.endUs},
                        {"args", {{"evictions", pool.evictions}, {"preemptions", pool.preemptions}}}});
    }
    if (!at.pressed.empty()) {
        Json kept = Json::object();
        Json dropped = Json::object();
        for (const auto& [layer, counts] : at.pressed) {
            kept[layerName(layer)] = counts.first;
            dropped[layerName(layer)] = counts.second;
        }
        stream.add(Json{{"ph", "C"}, {"pid", kDeviceProcess}, {"name", "press: kept tokens"}, {"ts", span.endUs},
                        {"args", std::move(kept)}});
        stream.add(Json{{"ph", "C"}, {"pid", kDeviceProcess}, {"name", "press: dropped tokens (total)"},
                        {"ts", span.endUs}, {"args", std::move(dropped)}});
    }
}

} // namespace

void PerfettoExport::write(std::ostream& out, const SessionMetadata& metadata, std::span<const Event> events) {
    std::int64_t steps = 0;
    bool timed = false;
    bool measured = false;
    std::int32_t layers = 0;
    for (const Event& event : events) {
        steps = std::max(steps, event.step + 1);
        layers = std::max(layers, event.layer + 1);
        if (const auto* compute = std::get_if<ComputeEvent>(&event.payload)) {
            timed = true;
            measured = measured || compute->timing == TimingSource::Measured;
        } else if (const auto* transfer = std::get_if<TransferEvent>(&event.payload)) {
            timed = true;
            measured = measured || transfer->timing == TimingSource::Measured;
        }
    }
    const std::vector<StepSpan> spans = stepSpans(events, steps, timed);
    const std::string timing = !timed ? "wall" : measured ? "measured" : "modeled";
    writePerfettoHeader(out, metadata, timing);
    EventStream stream(out);
    const std::map<std::string, int> requestLanes = writePerfettoLanes(stream, events, layers, metadata.device, timing);

    LaneWriter laneWriter(stream);
    FlowTracker flows(stream);
    std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> pressed;
    StepState state;
    std::int64_t filed = -1;
    std::size_t next = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
        ExportStep at{stream, laneWriter, flows, requestLanes, pressed, step, spans[static_cast<std::size_t>(step)],
                      args(step, -1)};
        StateReducer::beginStep(state, step);
        for (; next < events.size(); ++next) {
            const Event& event = events[next];
            if (std::max(event.step, filed) > step) {
                break;
            }
            filed = std::max(filed, event.step);
            StateReducer::apply(state, event);
            std::visit(
                [&](const auto& payload) {
                    using Row = PerfettoRow<std::decay_t<decltype(payload)>>;
                    if constexpr (requires { Row::add(payload, event, at); }) {
                        Row::add(payload, event, at);
                    }
                },
                event.payload);
        }
        writePerfettoStepEnd(at, state);
    }
    out << "\n]}\n";
}

void PerfettoExport::write(const std::filesystem::path& path, const SessionMetadata& metadata,
                           std::span<const Event> events) {
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) {
            throw SessionError("cannot create " + temporary.string());
        }
        write(out, metadata, events);
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw SessionError("cannot write " + temporary.string());
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw SessionError("cannot replace " + path.string() + " with the export: " + error.message());
    }
}

} // namespace kvscope::trace
