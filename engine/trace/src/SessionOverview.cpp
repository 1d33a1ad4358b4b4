// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionOverview.h"

#include "PayloadStream.h"
#include "SpanBlock.h"

#include "ByteReader.h"
#include "ByteWriter.h"
#include "EventCodec.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace kvscope::trace {

namespace {

constexpr std::array<SeriesField, 4> kCacheWideFields{SeriesField::BytesDeviceFullPrecision,
                                                      SeriesField::BytesDeviceQuantized,
                                                      SeriesField::BytesHost, SeriesField::WallNs};
constexpr std::array<SeriesField, 5> kTokenFields{SeriesField::SeqLength, SeriesField::StoredTokens,
                                                  SeriesField::KvLength, SeriesField::ResidualTokens,
                                                  SeriesField::QuantizedTokens};

/// Keyframes a Timeline keeps for steps 0..lastStep: one per multiple of the interval before lastStep.
std::size_t expectedKeyframes(std::int64_t lastStep, std::int64_t interval) {
    return lastStep > 0 ? static_cast<std::size_t>((lastStep - 1) / interval + 1) : 0;
}

/// Whether the columns hold every token count exactly (none beyond i32).
bool exact(const SeriesColumns& columns) {
    return columns.size() == 0 || columns.values(-1, SeriesField::SeqLength, 0, 0).has_value();
}

/// The columns section (sessions/FORMAT.md, "Overview payload"): i64 steps | u32 layers | the cache-wide
/// columns | per token field and layer, a presence byte and the column.
void encodeRows(ByteWriter& out, const SeriesColumns& columns, std::size_t layerCount) {
    // Columns as differences from the step before (wrapping): token counts grow by a few a step, so the
    // differences are small and repeat, and zstd makes little of them.
    const std::int64_t steps = columns.size();
    const auto layers = static_cast<std::int32_t>(layerCount);
    out.put(steps);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(layers));
    for (const SeriesField field : kCacheWideFields) {
        std::uint64_t previous = 0;
        const std::vector<double> values =
            steps > 0 ? columns.values(-1, field, 0, steps - 1).value_or(std::vector<double>{})
                      : std::vector<double>{};
        for (const double value : values) {
            const auto current = static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
            out.put<std::uint64_t>(current - previous);
            previous = current;
        }
    }
    for (const SeriesField field : kTokenFields) {
        for (std::int32_t layer = 0; layer < layers; ++layer) {
            const std::vector<double> values =
                steps > 0 ? columns.values(layer, field, 0, steps - 1).value_or(std::vector<double>{})
                          : std::vector<double>{};
            const bool present = std::any_of(values.begin(), values.end(), [](double v) { return v != 0.0; });
            out.put<std::uint8_t>(present ? 1 : 0);
            if (!present) {
                continue;
            }
            std::uint32_t previous = 0;
            for (const double value : values) {
                const auto current = static_cast<std::uint32_t>(static_cast<std::int32_t>(value));
                out.put<std::uint32_t>(current - previous);
                previous = current;
            }
        }
    }
}

/// Reads a columns section into `into` (appending its rows); at least `minLayers` layers and at most
/// `maxSteps` steps. Returns its layer count.
std::uint32_t decodeRows(ByteReader& in, SeriesColumns& into, std::size_t minLayers, std::int64_t maxSteps) {
    const auto steps = in.get<std::int64_t>();
    const auto layers = in.get<std::uint32_t>();
    if (steps < 0 || steps > maxSteps || layers < minLayers || layers > in.remaining() / 5) {
        throw EventCodec::Invalid("columns of " + std::to_string(steps) + " steps and " +
                                  std::to_string(layers) + " layers where at most " +
                                  std::to_string(maxSteps) + " steps and at least " +
                                  std::to_string(minLayers) + " layers are left");
    }
    const auto count = static_cast<std::size_t>(steps);
    // Every step has its four cache-wide values (32 bytes), so `count` is bounded by the payload.
    if (count > in.remaining() / 32) {
        throw EventCodec::Invalid("columns of " + std::to_string(steps) + " steps in " +
                                  std::to_string(in.remaining()) + " bytes");
    }
    // The stored columns are read where they lie in the payload (as spans).
    std::array<std::span<const std::uint8_t>, 4> cacheWide;
    for (auto& column : cacheWide) {
        column = in.take(count * 8);
    }
    std::array<std::vector<std::span<const std::uint8_t>>, 5> tokens;
    for (auto& columns : tokens) {
        columns.resize(layers);
        for (auto& column : columns) {
            if (in.get<std::uint8_t>() != 0) {
                if (count > in.remaining() / 4) {
                    throw EventCodec::Invalid("a token column runs past the payload");
                }
                column = in.take(count * 4);
            }
        }
    }
    // Summed column by column into whole columns handed to SeriesColumns a slice of steps at a time, laid out as the
    // pass lays its rows out: a 1.6 overview's section holds every step, so a slice (not the section) bounds the
    // copies made (a few MB).
    std::array<std::uint64_t, 4> wideSums{};
    std::array<std::vector<std::uint32_t>, 5> tokenSums;
    for (auto& sums : tokenSums) {
        sums.assign(layers, 0);
    }
    std::array<std::vector<std::int64_t>, 4> wide;
    std::array<std::vector<std::vector<std::int32_t>>, 5> values;
    for (auto& fields : values) {
        fields.resize(layers);
    }
    constexpr auto kSliceSteps = static_cast<std::size_t>(SessionFormat::kColumnBlockSteps);
    for (std::size_t first = 0; first < count; first += kSliceSteps) {
        const std::size_t steps = std::min(kSliceSteps, count - first);
        for (std::size_t column = 0; column < wide.size(); ++column) {
            wide[column].resize(steps);
            for (std::size_t step = 0; step < steps; ++step) {
                std::uint64_t delta = 0;
                std::memcpy(&delta, cacheWide[column].data() + (first + step) * 8, 8);
                wideSums[column] += delta;
                wide[column][step] = static_cast<std::int64_t>(wideSums[column]);
            }
        }
        for (std::size_t field = 0; field < tokens.size(); ++field) {
            for (std::size_t layer = 0; layer < layers; ++layer) {
                const auto& column = tokens[field][layer];
                if (column.empty()) {
                    continue;
                }
                std::vector<std::int32_t>& filled = values[field][layer];
                filled.resize(steps);
                std::uint32_t& sum = tokenSums[field][layer];
                for (std::size_t step = 0; step < steps; ++step) {
                    std::uint32_t delta = 0;
                    std::memcpy(&delta, column.data() + (first + step) * 4, 4);
                    sum += delta;
                    filled[step] = static_cast<std::int32_t>(sum);
                }
            }
        }
        into.append(steps, wide, values);
    }
    return layers;
}

} // namespace

SessionOverview::SessionOverview(std::int64_t keyframeInterval, std::int64_t columnBlockSteps)
    : m_keyframeInterval(keyframeInterval), m_columnBlockSteps(columnBlockSteps) {}

void SessionOverview::beginChunk(std::int64_t step) {
    // Filed as Timeline::openFile's pass files a chunk: under its step, or the newest one.
    step = std::max({step, m_lastStep, std::int64_t{0}});
    if (step > m_lastStep) {
        openStep(step);
    }
}

void SessionOverview::add(const Event& event) {
    ++m_eventCount;
    StateReducer::apply(m_current, event);
    if (TimedSpans::accepts(event.kind())) {
        m_pendingSpans.add(event); // to a Spans block (1.9): 24 bytes each until it is taken off
    } else if (Timeline::isRetained(event.kind())) {
        // Encoded as it comes (a third of an event's size in memory): an offloaded session writes millions.
        ByteWriter out(m_retainedBytes);
        EventCodec::encode(out, event);
        ++m_encodedRetained;
    }
    m_paged = m_paged || isPagedKind(event.kind()) || isServerKind(event.kind());
    m_layers = std::max(m_layers, m_current.layers.size());
}

void SessionOverview::openStep(std::int64_t step) {
    // As Timeline::openStep: the step left is complete, a keyframe on the interval, a row of the columns.
    if (m_lastStep >= 0) {
        if (m_lastStep % m_keyframeInterval == 0) {
            keepKeyframe();
        }
        m_columns.record(m_current);
    }
    for (std::int64_t skipped = m_lastStep + 1; skipped < step; ++skipped) {
        StateReducer::beginStep(m_current, skipped);
        if (skipped % m_keyframeInterval == 0) {
            keepKeyframe();
        }
        m_columns.record(m_current);
    }
    StateReducer::beginStep(m_current, step);
    m_lastStep = step;
}

void SessionOverview::keepKeyframe() {
    if (m_columnBlockSteps <= 0) {
        m_keyframes.push_back(m_current);
        return;
    }
    // The writer keeps its keyframes as they will be written: a third of a StepState's size in memory.
    ByteWriter out(m_keyframeBytes);
    EventCodec::encode(out, m_current);
    ++m_encodedKeyframes;
}

void SessionOverview::finish() {
    if (m_lastStep >= 0 && m_columnsFirst + m_columns.size() == m_lastStep) {
        m_columns.record(m_current);
    }
}

std::optional<std::vector<std::uint8_t>> SessionOverview::takeColumnBlock() {
    if (m_columnBlockSteps <= 0 || m_columns.size() < m_columnBlockSteps) {
        return std::nullopt;
    }
    std::optional<std::vector<std::uint8_t>> raw;
    if (exact(m_columns)) {
        raw.emplace();
        ByteWriter out(*raw);
        out.put(m_columnsFirst);
        encodeRows(out, m_columns, m_layers);
    } else {
        m_columnsInexact = true; // the session opens through the pass; the rows are dropped all the same
    }
    m_columnsFirst += m_columns.size();
    m_columns = SeriesColumns();
    return raw;
}

std::optional<std::vector<std::uint8_t>> SessionOverview::takeSpanBlock(std::size_t minimum) {
    if (m_pendingSpans.size() < std::max<std::size_t>(minimum, 1)) {
        return std::nullopt;
    }
    std::vector<std::uint8_t> raw = SpanBlock::encode(m_spansTaken, m_pendingSpans.spans());
    m_spansTaken += m_pendingSpans.size();
    m_pendingSpans.clear(); // its room is kept for the next block
    return raw;
}

bool SessionOverview::encodable() const {
    return !m_paged && !m_columnsInexact && exact(m_columns) &&
           m_columnsFirst + m_columns.size() == m_lastStep + 1;
}

void SessionOverview::encode(std::vector<std::uint8_t>& head, std::vector<std::uint8_t>& tail) const {
    ByteWriter out(head);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(m_keyframeInterval));
    out.put(m_lastStep);
    out.put(m_eventCount);
    EventCodec::encode(out, m_current);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(m_keyframes.size() + m_encodedKeyframes));
    for (const StepState& keyframe : m_keyframes) {
        EventCodec::encode(out, keyframe);
    }
    ByteWriter after(tail);
    encodeRows(after, m_columns, m_layers);
    after.put<std::uint32_t>(static_cast<std::uint32_t>(m_encodedRetained));
    after.putArray(m_retainedBytes.data(), m_retainedBytes.size());
    after.put(m_spansTaken);
}

namespace {

/// Runs `parse` on a ByteReader over as many of the stream's next bytes as it takes (the parts of an overview before
/// its retained events have no length of their own) and returns how many it read, leaving them in the stream:
/// `guess` bytes first, twice as many after each failure, until the failure is over the rest of the payload (damage).
template <typename Parse> std::size_t parseFromStream(PayloadStream& raw, std::size_t guess, Parse parse) {
    for (std::size_t want = guess;; want *= 2) {
        const std::span<const std::uint8_t> bytes = raw.peek(want);
        try {
            ByteReader in(bytes);
            parse(in);
            return in.position();
        } catch (const std::runtime_error&) {
            // An overrun, or a count checked against the bytes left (EventCodec::Invalid): in a part of the
            // payload, a sign to read more of it.
            if (bytes.size() < want) {
                throw;
            }
        }
    }
}

/// Reads past the rows decodeRows reads (the same layout), without keeping them: how long they are.
void skipRows(ByteReader& in, std::int64_t maxSteps) {
    const auto steps = in.get<std::int64_t>();
    const auto layers = in.get<std::uint32_t>();
    if (steps < 0 || steps > maxSteps) {
        throw EventCodec::Invalid("columns of " + std::to_string(steps) + " steps where at most " +
                                  std::to_string(maxSteps) + " are left");
    }
    const auto count = static_cast<std::size_t>(steps);
    if (count > in.remaining() / 32) {
        throw ByteReader::Overrun("columns of " + std::to_string(steps) + " steps in " +
                                  std::to_string(in.remaining()) + " bytes");
    }
    in.take(count * 8 * 4);
    for (int field = 0; field < 5; ++field) {
        for (std::uint32_t layer = 0; layer < layers; ++layer) {
            if (in.get<std::uint8_t>() != 0) {
                in.take(count * 4);
            }
        }
    }
}

/// Bytes the overview's head is first decoded from: 32 x 131072 steps keep ~22 MB of keyframes.
constexpr std::size_t kHeadGuess = 32u << 20;
constexpr std::size_t kRowsGuess = 8u << 20;

} // namespace

SessionOverview SessionOverview::decode(PayloadStream& raw, std::size_t blocks, const ColumnBlockReader& block,
                                        std::uint16_t minor) {
    SessionOverview overview(1);
    raw.skip(parseFromStream(raw, kHeadGuess, [&](ByteReader& in) {
        const auto interval = in.get<std::uint32_t>();
        if (interval < 1) {
            throw EventCodec::Invalid("a keyframe interval of 0");
        }
        overview = SessionOverview(interval);
        overview.m_lastStep = in.get<std::int64_t>();
        if (overview.m_lastStep < -1) {
            throw EventCodec::Invalid("last step " + std::to_string(overview.m_lastStep));
        }
        overview.m_eventCount = in.get<std::uint64_t>();
        overview.m_current = EventCodec::decodeStepState(in);
        // A keyframe takes more than 64 bytes: a count beyond the bytes left is damage, not an allocation (or, in
        // a part of the stream, a sign to read more of it).
        overview.m_keyframes.resize(in.getCount(64));
        for (StepState& keyframe : overview.m_keyframes) {
            keyframe = EventCodec::decodeStepState(in);
        }
    }));
    const std::int64_t interval = overview.m_keyframeInterval;
    if (overview.m_keyframes.size() != expectedKeyframes(overview.m_lastStep, interval)) {
        throw EventCodec::Invalid(std::to_string(overview.m_keyframes.size()) + " keyframes for step " +
                                  std::to_string(overview.m_lastStep));
    }
    // The blocks taken off while writing (1.7), then the rows after them.
    for (std::size_t index = 0; index < blocks; ++index) {
        const std::vector<std::uint8_t> payload = block(index);
        ByteReader blockIn(payload);
        const auto first = blockIn.get<std::int64_t>();
        if (first != overview.m_columns.size()) {
            throw EventCodec::Invalid("a columns block of step " + std::to_string(first) + " after " +
                                      std::to_string(overview.m_columns.size()) + " steps");
        }
        decodeRows(blockIn, overview.m_columns, 0, overview.m_lastStep + 1 - first);
        if (!blockIn.atEnd()) {
            throw EventCodec::Invalid(std::to_string(blockIn.remaining()) + " bytes follow a columns block");
        }
    }
    const std::int64_t before = overview.m_columns.size();
    // The rows and the retained events' count: measured first, then decoded from one span.
    const std::size_t rowsBytes = parseFromStream(raw, kRowsGuess, [&](ByteReader& in) {
        skipRows(in, overview.m_lastStep + 1 - before);
        in.get<std::uint32_t>();
    });
    ByteReader rowsIn(raw.peek(rowsBytes));
    const std::uint32_t layers =
        decodeRows(rowsIn, overview.m_columns, overview.m_current.layers.size(), overview.m_lastStep + 1 - before);
    const std::size_t retained = rowsIn.get<std::uint32_t>();
    raw.skip(rowsBytes);
    if (overview.m_columns.size() != overview.m_lastStep + 1) {
        throw EventCodec::Invalid("columns of " + std::to_string(overview.m_columns.size()) +
                                  " steps for a session of " + std::to_string(overview.m_lastStep + 1));
    }
    overview.m_columns.shrinkToFit();
    overview.m_layers = layers;
    // An event record takes at least its kind, length, step, layer and sequence.
    constexpr std::size_t kRecordBytes = 1 + 4 + 8 + 4 + 8;
    if (retained > raw.remaining() / kRecordBytes) {
        throw EventCodec::Invalid(std::to_string(retained) + " retained events in " + std::to_string(raw.remaining()) +
                                  " bytes");
    }
    // Record by record from the stream (a 1.8 offloaded session's are hundreds of MB). Transfers and compute spans
    // go to their compact store as they are decoded: an offloaded session has millions, which as events would take
    // gigabytes before the timeline took them over.
    if (minor < 9) {
        overview.m_spans.reserve(retained); // mostly spans where there are many: no doubling of millions
    }
    for (std::size_t index = 0; index < retained; ++index) {
        const std::span<const std::uint8_t> header = raw.peek(5);
        ByteReader lengthIn(header);
        lengthIn.get<std::uint8_t>();
        const std::size_t length = 5 + std::size_t{lengthIn.get<std::uint32_t>()};
        const std::span<const std::uint8_t> record = raw.peek(length);
        ByteReader in(record);
        if (std::optional<Event> event = EventCodec::decode(in); event && !overview.m_spans.add(*event)) {
            overview.m_retained.push_back(std::move(*event));
        }
        raw.skip(length);
    }
    overview.m_retained.shrink_to_fit();
    // Room was reserved for every retained event: given back only where many were not spans, since the copy of
    // an offloaded session's spans (300 MB) costs more than their slack.
    if (overview.m_spans.size() < retained - retained / 8) {
        overview.m_spans.shrinkToFit();
    }
    if (minor >= 9) {
        ByteReader countIn(raw.peek(8));
        overview.m_spansTaken = countIn.get<std::uint64_t>();
        raw.skip(8);
    }
    if (raw.remaining() != 0) {
        throw EventCodec::Invalid(std::to_string(raw.remaining()) + " bytes follow the overview");
    }
    raw.finish();
    return overview;
}

} // namespace kvscope::trace
