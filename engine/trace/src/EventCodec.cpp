#include "EventCodec.h"

#include <string>
#include <type_traits>

namespace kvscope::trace {

namespace {

template <typename Enum> Enum checkedEnum(std::uint8_t raw, std::uint8_t last, const char* what) {
    if (raw > last) {
        throw EventCodec::Invalid(std::string("unknown ") + what + " " + std::to_string(raw) + " (0.." +
                                  std::to_string(last) + " allowed)");
    }
    return static_cast<Enum>(raw);
}

LayerKind layerKind(ByteReader& in) {
    return checkedEnum<LayerKind>(in.get<std::uint8_t>(),
                                  static_cast<std::uint8_t>(LayerKind::LinearAttentionAndFullAttention), "layer kind");
}

bool flag(ByteReader& in) {
    const auto raw = in.get<std::uint8_t>();
    if (raw > 1) {
        throw EventCodec::Invalid("a boolean holds " + std::to_string(raw) + " (0 or 1 allowed)");
    }
    return raw == 1;
}

std::vector<std::int64_t> int64List(ByteReader& in) {
    std::vector<std::int64_t> values(in.getCount(sizeof(std::int64_t)));
    for (auto& value : values) {
        value = in.get<std::int64_t>();
    }
    return values;
}

void putInt64List(ByteWriter& out, const std::vector<std::int64_t>& values) {
    out.put<std::uint32_t>(static_cast<std::uint32_t>(values.size()));
    for (auto value : values) {
        out.put(value);
    }
}

struct PayloadEncoder {
    ByteWriter& out;

    void operator()(const UpdateEvent& e) const {
        out.put(e.tokensIn);
        out.put(e.seqLength);
        out.put(e.storedTokens);
        out.put(e.capacity);
        out.put(e.returnedTokens);
        out.put(e.bytes);
        out.put(static_cast<std::uint8_t>(e.layerType));
    }
    void operator()(const MaskSizesEvent& e) const {
        out.put(e.queryLength);
        out.put(e.kvLength);
        out.put(e.kvOffset);
    }
    void operator()(const WindowSlideEvent& e) const {
        out.put(e.positionsEvicted);
        out.put(e.windowStart);
        out.put(e.windowEnd);
        out.put(e.windowSize);
    }
    void operator()(const QuantizeFlushEvent& e) const {
        out.put(e.tokensMoved);
        out.put(e.residualBefore);
        out.put(e.residualAfter);
        out.put(e.quantizedTokensAfter);
        out.put(e.bytesBefore);
        out.put(e.bytesAfter);
        out.put(e.maxAbsError);
        out.put(e.meanAbsError);
        out.put(e.relativeError);
    }
    void operator()(const TransferEvent& e) const {
        out.put(static_cast<std::uint8_t>(e.direction));
        out.put(static_cast<std::uint8_t>(e.lane));
        out.put(static_cast<std::uint8_t>(e.timing));
        out.put(e.beginNs);
        out.put(e.endNs);
        out.put(e.bytes);
    }
    void operator()(const CropEvent& e) const {
        out.put(e.maxLength);
        out.put(e.seqLengthBefore);
        out.put(e.seqLengthAfter);
    }
    void operator()(const ReorderEvent& e) const { putInt64List(out, e.beamIndices); }
    void operator()(const BatchRepeatEvent& e) const {
        out.put(e.repeats);
        out.put(e.batchBefore);
        out.put(e.batchAfter);
    }
    void operator()(const BatchSelectEvent& e) const {
        putInt64List(out, e.indices);
        out.put(e.batchBefore);
        out.put(e.batchAfter);
    }
    void operator()(const ResetEvent&) const {}
    void operator()(const MemoryEvent& e) const {
        out.put(e.deviceFullPrecision);
        out.put(e.deviceQuantized);
        out.put(e.host);
    }
    void operator()(const StepBeginEvent& e) const {
        out.put(e.tokenId);
        out.putString(e.text);
    }
    void operator()(const StepEndEvent& e) const {
        out.put(e.tokenId);
        out.putString(e.text);
        out.put(e.wallNs);
    }
    void operator()(const ComputeEvent& e) const {
        out.put(static_cast<std::uint8_t>(e.timing));
        out.put(e.beginNs);
        out.put(e.endNs);
    }
    void operator()(const LogitsEvent& e) const {
        putInt64List(out, e.tokenIds);
        out.put<std::uint32_t>(static_cast<std::uint32_t>(e.logProbs.size()));
        for (float value : e.logProbs) {
            out.put(value);
        }
        out.put<std::uint8_t>(e.complete ? 1 : 0);
    }
};

TransferDirection direction(ByteReader& in) {
    return checkedEnum<TransferDirection>(in.get<std::uint8_t>(), 1, "transfer direction");
}
TransferLane lane(ByteReader& in) { return checkedEnum<TransferLane>(in.get<std::uint8_t>(), 1, "transfer lane"); }
TimingSource timing(ByteReader& in) {
    return checkedEnum<TimingSource>(in.get<std::uint8_t>(), 1, "timing source");
}

EventPayload decodePayload(EventKind kind, ByteReader& in) {
    switch (kind) {
    case EventKind::Update: {
        UpdateEvent e;
        e.tokensIn = in.get<std::int64_t>();
        e.seqLength = in.get<std::int64_t>();
        e.storedTokens = in.get<std::int64_t>();
        e.capacity = in.get<std::int64_t>();
        e.returnedTokens = in.get<std::int64_t>();
        e.bytes = in.get<std::int64_t>();
        e.layerType = layerKind(in);
        return e;
    }
    case EventKind::MaskSizes:
        return MaskSizesEvent{in.get<std::int64_t>(), in.get<std::int64_t>(), in.get<std::int64_t>()};
    case EventKind::WindowSlide:
        return WindowSlideEvent{in.get<std::int64_t>(), in.get<std::int64_t>(), in.get<std::int64_t>(),
                                in.get<std::int64_t>()};
    case EventKind::QuantizeFlush: {
        QuantizeFlushEvent e;
        e.tokensMoved = in.get<std::int64_t>();
        e.residualBefore = in.get<std::int64_t>();
        e.residualAfter = in.get<std::int64_t>();
        e.quantizedTokensAfter = in.get<std::int64_t>();
        e.bytesBefore = in.get<std::int64_t>();
        e.bytesAfter = in.get<std::int64_t>();
        e.maxAbsError = in.get<double>();
        e.meanAbsError = in.get<double>();
        e.relativeError = in.get<double>();
        return e;
    }
    case EventKind::Transfer: {
        TransferEvent e;
        e.direction = direction(in);
        e.lane = lane(in);
        e.timing = timing(in);
        e.beginNs = in.get<std::int64_t>();
        e.endNs = in.get<std::int64_t>();
        e.bytes = in.get<std::int64_t>();
        return e;
    }
    case EventKind::Crop:
        return CropEvent{in.get<std::int64_t>(), in.get<std::int64_t>(), in.get<std::int64_t>()};
    case EventKind::Reorder:
        return ReorderEvent{int64List(in)};
    case EventKind::BatchRepeat:
        return BatchRepeatEvent{in.get<std::int64_t>(), in.get<std::int64_t>(), in.get<std::int64_t>()};
    case EventKind::BatchSelect: {
        BatchSelectEvent e;
        e.indices = int64List(in);
        e.batchBefore = in.get<std::int64_t>();
        e.batchAfter = in.get<std::int64_t>();
        return e;
    }
    case EventKind::Reset:
        return ResetEvent{};
    case EventKind::Memory:
        return MemoryEvent{in.get<std::int64_t>(), in.get<std::int64_t>(), in.get<std::int64_t>()};
    case EventKind::StepBegin: {
        StepBeginEvent e;
        e.tokenId = in.get<std::int64_t>();
        e.text = in.getString();
        return e;
    }
    case EventKind::StepEnd: {
        StepEndEvent e;
        e.tokenId = in.get<std::int64_t>();
        e.text = in.getString();
        e.wallNs = in.get<std::int64_t>();
        return e;
    }
    case EventKind::Compute: {
        ComputeEvent e;
        e.timing = timing(in);
        e.beginNs = in.get<std::int64_t>();
        e.endNs = in.get<std::int64_t>();
        return e;
    }
    case EventKind::Logits: {
        LogitsEvent e;
        e.tokenIds = int64List(in);
        e.logProbs.resize(in.getCount(sizeof(float)));
        for (float& value : e.logProbs) {
            value = in.get<float>();
        }
        e.complete = flag(in);
        if (!e.complete && e.tokenIds.size() != e.logProbs.size()) {
            throw EventCodec::Invalid("logits hold " + std::to_string(e.tokenIds.size()) + " token ids but " +
                                      std::to_string(e.logProbs.size()) + " log-probabilities");
        }
        return e;
    }
    }
    throw EventCodec::Invalid("unhandled event kind");
}

} // namespace

void EventCodec::encode(ByteWriter& out, const Event& event) {
    out.put(static_cast<std::uint8_t>(event.payload.index()));
    const std::size_t body = out.reserveLength();
    out.put(event.step);
    out.put(event.layer);
    out.put(event.sequence);
    std::visit(PayloadEncoder{out}, event.payload);
    out.patchLength(body);
}

std::optional<Event> EventCodec::decode(ByteReader& in) {
    const auto kind = in.get<std::uint8_t>();
    const auto length = in.get<std::uint32_t>();
    ByteReader body(in.take(length));
    if (kind >= kEventKindCount) {
        return std::nullopt; // a kind from a newer minor version: its length lets us skip it
    }
    Event event;
    event.step = body.get<std::int64_t>();
    event.layer = body.get<std::int32_t>();
    event.sequence = body.get<std::uint64_t>();
    event.payload = decodePayload(static_cast<EventKind>(kind), body);
    // Newer minors may append fields to a known payload; the length lets this reader ignore them.
    return event;
}

void EventCodec::encode(ByteWriter& out, const StepState& state) {
    out.put(state.step);
    out.put(state.memoryDeviceFullPrecision);
    out.put(state.memoryDeviceQuantized);
    out.put(state.memoryHost);
    out.put(state.inputTokenId);
    out.putString(state.inputText);
    out.put(state.tokenId);
    out.putString(state.tokenText);
    out.put(state.wallNs);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(state.layers.size()));
    for (const LayerState& layer : state.layers) {
        out.put<std::uint8_t>(layer.initialized ? 1 : 0);
        out.put(static_cast<std::uint8_t>(layer.kind));
        for (std::int64_t value :
             {layer.seqLength, layer.storedTokens, layer.capacity, layer.returnedTokens, layer.lastUpdateStep,
              layer.queryLength, layer.kvLength, layer.kvOffset, layer.windowStart, layer.windowEnd,
              layer.windowSize, layer.evictedTokens, layer.residualTokens, layer.quantizedTokens,
              layer.lastFlushStep}) {
            out.put(value);
        }
        out.put(layer.lastFlushRelativeError);
        out.put(static_cast<std::uint8_t>(layer.residency));
        out.put(layer.bytesDevice);
        out.put(layer.bytesDeviceQuantized);
        out.put(layer.bytesHost);
        out.put(layer.batchSize);
    }
}

StepState EventCodec::decodeStepState(ByteReader& in) {
    StepState state;
    state.step = in.get<std::int64_t>();
    state.memoryDeviceFullPrecision = in.get<std::int64_t>();
    state.memoryDeviceQuantized = in.get<std::int64_t>();
    state.memoryHost = in.get<std::int64_t>();
    state.inputTokenId = in.get<std::int64_t>();
    state.inputText = in.getString();
    state.tokenId = in.get<std::int64_t>();
    state.tokenText = in.getString();
    state.wallNs = in.get<std::int64_t>();
    constexpr std::size_t kLayerBytes = 2 + 15 * 8 + 8 + 1 + 4 * 8;
    state.layers.resize(in.getCount(kLayerBytes));
    for (LayerState& layer : state.layers) {
        layer.initialized = flag(in);
        layer.kind = layerKind(in);
        for (std::int64_t* value :
             {&layer.seqLength, &layer.storedTokens, &layer.capacity, &layer.returnedTokens, &layer.lastUpdateStep,
              &layer.queryLength, &layer.kvLength, &layer.kvOffset, &layer.windowStart, &layer.windowEnd,
              &layer.windowSize, &layer.evictedTokens, &layer.residualTokens, &layer.quantizedTokens,
              &layer.lastFlushStep}) {
            *value = in.get<std::int64_t>();
        }
        layer.lastFlushRelativeError = in.get<double>();
        layer.residency = checkedEnum<Residency>(in.get<std::uint8_t>(), 2, "residency");
        layer.bytesDevice = in.get<std::int64_t>();
        layer.bytesDeviceQuantized = in.get<std::int64_t>();
        layer.bytesHost = in.get<std::int64_t>();
        layer.batchSize = in.get<std::int64_t>();
    }
    return state;
}

} // namespace kvscope::trace
