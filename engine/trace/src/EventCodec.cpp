// SPDX-License-Identifier: GPL-3.0-or-later
#include "EventCodec.h"

#include "EventFields.h"

#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace kvscope::trace {

namespace {

template <typename Enum> constexpr const char* enumName();
template <> constexpr const char* enumName<LayerKind>() {
    return "layer kind";
}
template <> constexpr const char* enumName<TransferDirection>() {
    return "transfer direction";
}
template <> constexpr const char* enumName<TransferLane>() {
    return "transfer lane";
}
template <> constexpr const char* enumName<TimingSource>() {
    return "timing source";
}
template <> constexpr const char* enumName<Residency>() {
    return "residency";
}
template <> constexpr const char* enumName<FinishReason>() {
    return "finish reason";
}
template <> constexpr const char* enumName<DraftSource>() {
    return "draft source";
}
template <> constexpr const char* enumName<ServerCacheChange>() {
    return "server cache change";
}

template <typename T> struct IsVector : std::false_type {};
template <typename T> struct IsVector<std::vector<T>> : std::true_type {};

template <typename Record> void writeRecord(ByteWriter& out, const Record& record);
template <typename Record> void readRecord(ByteReader& in, Record& record);

/// Bytes a record of fixed-size fields takes on the wire (the floor a count of them is checked against).
template <typename Value> constexpr std::size_t wireBytes() {
    if constexpr (std::is_enum_v<Value> || std::is_same_v<Value, bool>) {
        return 1;
    } else if constexpr (std::is_arithmetic_v<Value>) {
        return sizeof(Value);
    } else if constexpr (std::is_same_v<Value, std::string> || IsVector<Value>::value) {
        return sizeof(std::uint32_t);
    } else {
        return std::apply(
            [](auto... members) {
                return (std::size_t{0} + ... +
                        wireBytes<std::remove_cvref_t<decltype(std::declval<Value&>().*members)>>());
            },
            EventFields<Value>::list);
    }
}

template <typename Value> void write(ByteWriter& out, const Value& value) {
    if constexpr (std::is_enum_v<Value>) {
        out.put(static_cast<std::uint8_t>(value));
    } else if constexpr (std::is_same_v<Value, bool>) {
        out.put<std::uint8_t>(value ? 1 : 0);
    } else if constexpr (std::is_arithmetic_v<Value>) {
        out.put(value);
    } else if constexpr (std::is_same_v<Value, std::string>) {
        out.putString(value);
    } else if constexpr (IsVector<Value>::value) {
        using Item = typename Value::value_type;
        out.put<std::uint32_t>(static_cast<std::uint32_t>(value.size()));
        if constexpr (std::is_arithmetic_v<Item> && !std::is_same_v<Item, bool>) {
            out.putArray(value.data(), value.size()); // the same bytes as one put() per item
        } else {
            for (const auto& item : value) {
                write(out, item);
            }
        }
    } else {
        writeRecord(out, value);
    }
}

template <typename Value> void read(ByteReader& in, Value& value) {
    if constexpr (std::is_enum_v<Value>) {
        const auto raw = in.get<std::uint8_t>();
        constexpr auto last = static_cast<std::uint8_t>(Value::Last);
        if (raw > last) {
            throw EventCodec::Invalid(std::string("unknown ") + enumName<Value>() + " " +
                                      std::to_string(raw) + " (0.." + std::to_string(last) + " allowed)");
        }
        value = static_cast<Value>(raw);
    } else if constexpr (std::is_same_v<Value, bool>) {
        const auto raw = in.get<std::uint8_t>();
        if (raw > 1) {
            throw EventCodec::Invalid("a boolean holds " + std::to_string(raw) + " (0 or 1 allowed)");
        }
        value = raw == 1;
    } else if constexpr (std::is_arithmetic_v<Value>) {
        value = in.get<Value>();
    } else if constexpr (std::is_same_v<Value, std::string>) {
        value = in.getString();
    } else if constexpr (IsVector<Value>::value) {
        // The count is checked against the bytes left before anything is allocated.
        value.resize(in.getCount(wireBytes<typename Value::value_type>()));
        for (auto& item : value) {
            read(in, item);
        }
    } else {
        readRecord(in, value);
    }
}

template <typename Record> void writeRecord(ByteWriter& out, const Record& record) {
    std::apply([&](auto... members) { (write(out, record.*members), ...); }, EventFields<Record>::list);
    std::apply([&](auto... members) { (write(out, record.*members), ...); },
               AppendedEventFields<Record>::list);
}

template <typename Record> void readRecord(ByteReader& in, Record& record) {
    // A fold over the comma operator reads the fields left to right, in wire order.
    std::apply([&](auto... members) { (read(in, record.*members), ...); }, EventFields<Record>::list);
}

/// Checks what the field types cannot: a top-k distribution holds one id per log-probability.
void checkDecoded(const LogitsEvent& e) {
    if (!e.complete && e.tokenIds.size() != e.logProbs.size()) {
        throw EventCodec::Invalid("logits hold " + std::to_string(e.tokenIds.size()) + " token ids but " +
                                  std::to_string(e.logProbs.size()) + " log-probabilities");
    }
}
/// A speculation names a piece per draft and keeps at most what it drafted.
void checkDecoded(const SpeculationEvent& e) {
    if (e.accepted < 0 || e.accepted > e.drafted() || (!e.pieceEnds.empty() && e.pieceEnds.size() != e.draftIds.size()) ||
        e.lengthsBefore.size() != e.lengthsAfter.size()) {
        throw EventCodec::Invalid("a speculation accepts " + std::to_string(e.accepted) + " of " +
                                  std::to_string(e.drafted()) + " drafts with " + std::to_string(e.pieceEnds.size()) +
                                  " piece ends and " + std::to_string(e.lengthsBefore.size()) + "/" +
                                  std::to_string(e.lengthsAfter.size()) + " layer lengths");
    }
}
template <typename Payload> void checkDecoded(const Payload&) {}

/// Decodes the payload of variant index `kind`.
template <std::size_t Index = 0> EventPayload decodePayload(std::size_t kind, ByteReader& in) {
    if constexpr (Index < kEventKindCount) {
        if (kind == Index) {
            std::variant_alternative_t<Index, EventPayload> payload;
            readRecord(in, payload);
            // Fields of a newer minor than the writer's are absent: the body ends before them.
            std::apply(
                [&](auto... members) { ((in.remaining() > 0 ? read(in, payload.*members) : void()), ...); },
                AppendedEventFields<decltype(payload)>::list);
            checkDecoded(payload);
            return payload;
        }
        return decodePayload<Index + 1>(kind, in);
    } else {
        throw EventCodec::Invalid("unhandled event kind " + std::to_string(kind));
    }
}

} // namespace

void EventCodec::encode(ByteWriter& out, const Event& event) {
    out.put(static_cast<std::uint8_t>(event.payload.index()));
    const std::size_t body = out.reserveLength();
    out.put(event.step);
    out.put(event.layer);
    out.put(event.sequence);
    std::visit([&](const auto& payload) { writeRecord(out, payload); }, event.payload);
    out.patchLength(body);
}

std::optional<Event> EventCodec::decode(ByteReader& in, Skipped* skipped) {
    const auto kind = in.get<std::uint8_t>();
    const auto length = in.get<std::uint32_t>();
    ByteReader body(in.take(length));
    if (kind >= kEventKindCount) {
        // An annotation, or a kind from a newer minor version: its length lets us skip it.
        if (skipped != nullptr) {
            skipped->kind = kind;
            skipped->lostOperation.clear();
            if (kind == kLostKind) {
                (void)body.get<std::int64_t>();
                (void)body.get<std::int32_t>();
                (void)body.get<std::uint64_t>();
                skipped->lostOperation = body.getString();
            }
        }
        return std::nullopt;
    }
    Event event;
    event.step = body.get<std::int64_t>();
    event.layer = body.get<std::int32_t>();
    event.sequence = body.get<std::uint64_t>();
    event.payload = decodePayload(kind, body);
    // Newer minors may append fields to a known payload; the length lets this reader ignore them.
    return event;
}

void EventCodec::encode(ByteWriter& out, const StepState& state) {
    writeRecord(out, state);
}

StepState EventCodec::decodeStepState(ByteReader& in) {
    StepState state;
    readRecord(in, state);
    return state;
}

} // namespace kvscope::trace
