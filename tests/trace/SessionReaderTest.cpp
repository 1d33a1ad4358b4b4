// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionReader.h"

#include "ByteReader.h"
#include "ByteWriter.h"
#include "Crc32c.h"
#include "EventCodec.h"
#include "TraceTestHelpers.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/SessionWriter.h"

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <random>

using namespace kvscope::trace;
using namespace kvscope::trace::testing;

namespace {

using Bytes = std::vector<std::uint8_t>;

SessionMetadata metadataInSessionReader() {
    SessionMetadata result;
    result.model = "gemma2";
    result.cacheKind = "quantized";
    result.cacheSettingsJson = R"({"nbits":4,"residual_length":8})";
    result.prompt = "prompt";
    return result;
}

Bytes fileBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes sessionBytes(std::span<const Event> events) {
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, metadataInSessionReader(), events);
    return fileBytes(path);
}

std::uint32_t readU32(const Bytes& bytes, std::size_t at) {
    std::uint32_t value;
    std::memcpy(&value, bytes.data() + at, 4);
    return value;
}

std::uint64_t readU64(const Bytes& bytes, std::size_t at) {
    std::uint64_t value;
    std::memcpy(&value, bytes.data() + at, 8);
    return value;
}

// An uncompressed chunk frame with a valid checksum.
Bytes chunkFrame(std::uint32_t type, const Bytes& payload) {
    Bytes frame;
    ByteWriter out(frame);
    out.put(type);
    out.put<std::uint16_t>(1);
    out.put<std::uint16_t>(0);
    out.put<std::uint64_t>(payload.size());
    out.put<std::uint64_t>(payload.size());
    frame.insert(frame.end(), payload.begin(), payload.end());
    out.put(Crc32c::compute(frame));
    return frame;
}

std::size_t headerLength(const Bytes& bytes) { return readU32(bytes, 12); }

} // namespace

TEST(SessionReaderTest, ReplayedTimelineEqualsTheLiveOneAtEveryStep) {
    const std::vector<Event> events = everyKindSession(300, 5);
    const Bytes bytes = sessionBytes(events);
    const SessionContents contents = SessionReader::read(bytes);
    ASSERT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.version, FormatVersion{});
    EXPECT_TRUE(contents.metadata == metadataInSessionReader());
    EXPECT_EQ(contents.skippedChunks, 0);
    ASSERT_TRUE(contents.events == events);
    const Timeline live = timelineOf(events);
    const Timeline replayed = timelineOf(contents.events);
    ASSERT_EQ(replayed.stepCount(), live.stepCount());
    for (std::int64_t step = 0; step < live.stepCount(); ++step) {
        ASSERT_TRUE(replayed.stateAt(step) == live.stateAt(step)) << step;
    }
    std::array<int, kEventKindCount> seen{};
    for (const Event& event : contents.events) {
        ++seen[static_cast<std::size_t>(event.kind())];
    }
    for (std::size_t kind = 0; kind < kEventKindCount; ++kind) {
        EXPECT_GT(seen[kind], 0) << "the round trip covers " << toString(static_cast<EventKind>(kind));
    }
}

TEST(SessionReaderTest, RefusesAHigherMajorNamingBothVersions) {
    Bytes bytes = sessionBytes(everyKindSession(3, 2));
    bytes[8] = 2; // major 2
    try {
        SessionReader::read(bytes, "future.kvsess");
        FAIL() << "a major 2 file was read";
    } catch (const SessionError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("future.kvsess"), std::string::npos) << message;
        EXPECT_NE(message.find("2." + std::to_string(SessionFormat::kMinor)), std::string::npos) << message;
        EXPECT_NE(message.find("1.x"), std::string::npos) << message;
    }
}

TEST(SessionReaderTest, RefusesFilesThatAreNotSessions) {
    const std::string text = "{\"traceEvents\":[]}";
    const Bytes json(text.begin(), text.end());
    EXPECT_THROW(SessionReader::read(json), SessionError);
    EXPECT_THROW(SessionReader::read(Bytes{}), SessionError);
    const Bytes truncatedHeader(SessionFormat::kMagic.begin(), SessionFormat::kMagic.begin() + 5);
    EXPECT_THROW(SessionReader::read(truncatedHeader), SessionError);
    EXPECT_THROW(SessionReader::read(std::filesystem::path("/nonexistent/x.kvsess")), SessionError);
}

TEST(SessionReaderTest, SkipsChunksAndEventKindsOfNewerMinorVersions) {
    const std::vector<Event> events = everyKindSession(4, 2);
    Bytes bytes = sessionBytes(events);
    // A newer minor: an unknown chunk after the header, and a step chunk holding an unknown event
    // kind (99) before a known one. The file has no footer then, since the index offsets moved.
    bytes.resize(readU64(bytes, bytes.size() - SessionFormat::kFooterBytes)); // drop index + footer
    bytes[10] = SessionFormat::kMinor + 1;                                    // a newer minor
    const std::size_t header = headerLength(bytes);
    const Bytes unknown = chunkFrame(99, Bytes{1, 2, 3, 4});
    // Fix the header checksum for the new minor.
    Bytes headerBytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header) - 4);
    const std::uint32_t crc = Crc32c::compute(headerBytes);
    std::memcpy(bytes.data() + header - 4, &crc, 4);
    bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(header), unknown.begin(), unknown.end());

    Bytes step;
    ByteWriter out(step);
    const std::int64_t lastStep = timelineOf(events).stepCount();
    out.put<std::int64_t>(lastStep);
    out.put<std::uint32_t>(2);
    out.put<std::uint8_t>(99);
    out.put<std::uint32_t>(5);
    for (int i = 0; i < 5; ++i) {
        out.put<std::uint8_t>(0xAB);
    }
    out.put<std::uint8_t>(static_cast<std::uint8_t>(EventKind::Reset));
    out.put<std::uint32_t>(8 + 4 + 8 + 3); // a known payload with 3 bytes a newer minor appended
    out.put<std::int64_t>(lastStep);
    out.put<std::int32_t>(-1);
    out.put<std::uint64_t>(77);
    out.put<std::uint8_t>(1);
    out.put<std::uint8_t>(2);
    out.put<std::uint8_t>(3);
    const Bytes frame = chunkFrame(static_cast<std::uint32_t>(SessionFormat::ChunkType::Step), step);
    bytes.insert(bytes.end(), frame.begin(), frame.end());

    const SessionContents contents = SessionReader::read(bytes);
    EXPECT_EQ(contents.version, (FormatVersion{1, SessionFormat::kMinor + 1}));
    EXPECT_EQ(contents.skippedChunks, 1);
    std::vector<Event> expected = events;
    expected.push_back(Event{lastStep, -1, 77, ResetEvent{}});
    ASSERT_EQ(contents.events.size(), expected.size()) << contents.damage;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(contents.events[i] == expected[i]) << i << " " << toString(expected[i].kind());
    }
    EXPECT_FALSE(contents.complete); // no footer
}

// 1.7: KeyRerotation's position map rides in the compression event, through a file and back; an event
// written by 1.6 (its body ends after prunedChannels) reads with an empty map.
TEST(SessionReaderTest, TheReRotationMapRoundTripsAndOlderCompressionEventsReadWithout) {
    CompressionEvent rerotated{5, 3, 2, 2, 6, {0, 3, 4, 1, 2, 4, 1, 2, 0, 3}, {}, {}, {}};
    rerotated.rotaryPositions = {0, 1, 2, 0, 1, 2};
    std::vector<Event> events = everyKindSession(3, 2);
    const std::int64_t last = events.back().step;
    events.push_back(Event{last, 1, 0, rerotated});
    const SessionContents contents = SessionReader::read(sessionBytes(events));
    ASSERT_TRUE(contents.complete) << contents.damage;
    ASSERT_TRUE(contents.events == events);
    const auto* read = std::get_if<CompressionEvent>(&contents.events.back().payload);
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(read->rotaryPositions, (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));

    // The 1.6 layout: the same event without the map's trailing count.
    Bytes encoded;
    ByteWriter out(encoded);
    CompressionEvent older = rerotated;
    older.rotaryPositions.clear();
    EventCodec::encode(out, Event{4, 1, 9, older});
    encoded.resize(encoded.size() - 4); // the empty map's u32 count: a 1.6 body ends before it
    const std::uint32_t length = readU32(encoded, 1) - 4;
    std::memcpy(encoded.data() + 1, &length, 4);
    ByteReader in{std::span<const std::uint8_t>(encoded)};
    const std::optional<Event> decoded = EventCodec::decode(in);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(in.remaining(), 0u);
    EXPECT_TRUE(*decoded == (Event{4, 1, 9, older}));
}

TEST(SessionReaderTest, ReportsTheFirstDamageAndKeepsTheStepsBeforeIt) {
    const std::vector<Event> events = everyKindSession(20, 3);
    const Bytes bytes = sessionBytes(events);
    const std::size_t firstChunk = headerLength(bytes);
    const std::uint64_t firstStored = readU64(bytes, firstChunk + 8);
    const std::size_t secondChunk = firstChunk + SessionFormat::kChunkHeaderBytes + firstStored + 4;
    Bytes flipped = bytes;
    flipped[secondChunk + SessionFormat::kChunkHeaderBytes + 2] ^= 0x10;
    const SessionContents contents = SessionReader::read(flipped, "flipped.kvsess");
    EXPECT_FALSE(contents.complete);
    EXPECT_EQ(contents.intactSteps, 1);
    EXPECT_NE(contents.damage.find("checksum"), std::string::npos) << contents.damage;
    EXPECT_NE(contents.damage.find("at byte " + std::to_string(secondChunk)), std::string::npos) << contents.damage;
    EXPECT_NE(contents.damage.find("1 steps intact"), std::string::npos) << contents.damage;

    Bytes truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(secondChunk + 10));
    const SessionContents cut = SessionReader::read(truncated);
    EXPECT_EQ(cut.intactSteps, 1);
    EXPECT_NE(cut.damage.find("ends inside a chunk header"), std::string::npos) << cut.damage;
}

TEST(SessionReaderTest, ADamagedHeaderIsRefusedWithAMessage) {
    Bytes bytes = sessionBytes(everyKindSession(3, 2));
    bytes[SessionFormat::kFixedHeaderBytes + 3] ^= 0x01; // inside the metadata JSON
    try {
        SessionReader::read(bytes, "h.kvsess");
        FAIL();
    } catch (const SessionError& error) {
        EXPECT_NE(std::string(error.what()).find("checksum"), std::string::npos) << error.what();
    }
}

// 300+ deterministic mutations: a mutated file must be refused with a message, read with its damage
// named, or read back exactly; never crash, never hang, never read silently different contents.
TEST(SessionReaderTest, MutatedFilesNeverCrashAndNeverChangeSilently) {
    const std::vector<Event> events = everyKindSession(60, 4);
    const Bytes original = sessionBytes(events);
    std::mt19937_64 random(2026);
    auto uniform = [&](std::size_t low, std::size_t high) {
        return std::uniform_int_distribution<std::size_t>(low, high)(random);
    };
    int refused = 0;
    int damaged = 0;
    int identical = 0;
    for (int trial = 0; trial < 330; ++trial) {
        Bytes mutated = original;
        std::string what;
        switch (trial % 3) {
        case 0: { // truncation
            mutated.resize(uniform(0, original.size() - 1));
            what = "truncated to " + std::to_string(mutated.size());
            break;
        }
        case 1: { // 1..3 bit flips
            const std::size_t flips = uniform(1, 3);
            for (std::size_t i = 0; i < flips; ++i) {
                const std::size_t at = uniform(0, mutated.size() - 1);
                mutated[at] ^= static_cast<std::uint8_t>(1U << uniform(0, 7));
                what += "flip at " + std::to_string(at) + " ";
            }
            break;
        }
        default: { // splice: a range of the file copied over another place, or inserted there
            const std::size_t length = uniform(1, 256);
            const std::size_t from = uniform(0, original.size() - length);
            const std::size_t to = uniform(0, original.size() - 1);
            if (trial % 2 == 0) {
                mutated.insert(mutated.begin() + static_cast<std::ptrdiff_t>(to), original.begin() + static_cast<std::ptrdiff_t>(from),
                               original.begin() + static_cast<std::ptrdiff_t>(from + length));
            } else {
                for (std::size_t i = 0; i < length && to + i < mutated.size(); ++i) {
                    mutated[to + i] = original[from + i];
                }
            }
            what = "splice " + std::to_string(from) + "+" + std::to_string(length) + " -> " + std::to_string(to);
            break;
        }
        }
        try {
            const SessionContents contents = SessionReader::read(mutated);
            if (contents.damage.empty()) {
                ++identical;
                EXPECT_TRUE(contents.complete) << what;
                EXPECT_TRUE(contents.events == events) << what;
                EXPECT_TRUE(contents.metadata == metadataInSessionReader()) << what;
            } else {
                ++damaged;
                EXPECT_FALSE(contents.complete) << what;
                EXPECT_LE(contents.events.size(), events.size()) << what;
                // What was kept is a prefix of the original session.
                EXPECT_TRUE(std::equal(contents.events.begin(), contents.events.end(), events.begin())) << what;
            }
        } catch (const SessionError& error) {
            ++refused;
            EXPECT_GT(std::strlen(error.what()), 10U) << what;
        }
    }
    EXPECT_EQ(refused + damaged + identical, 330);
    EXPECT_GT(damaged, 150); // most mutations hit chunks, which must say where they broke
}
