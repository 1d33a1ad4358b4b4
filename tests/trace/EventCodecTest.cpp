// SPDX-License-Identifier: GPL-3.0-or-later
// The speculation event's record (format 1.9, kind 29) against its bytes as sessions/FORMAT.md spells them, written
// out here by hand: the codec reads and writes it from EventFields alone, so this table is the check that the list
// says what the format says.
#include "ByteReader.h"
#include "ByteWriter.h"
#include "EventCodec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kvscope::trace {
namespace {

using Bytes = std::vector<std::uint8_t>;

/// Little-endian bytes of fixed-width values, for the literal tables.
struct LiteralBytes {
    Bytes bytes;
    LiteralBytes& u8(std::uint8_t value) {
        bytes.push_back(value);
        return *this;
    }
    LiteralBytes& u32(std::uint32_t value) {
        for (int shift = 0; shift < 32; shift += 8) {
            bytes.push_back(static_cast<std::uint8_t>(value >> shift));
        }
        return *this;
    }
    LiteralBytes& i64(std::int64_t value) {
        for (int shift = 0; shift < 64; shift += 8) {
            bytes.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> shift));
        }
        return *this;
    }
    LiteralBytes& list(std::initializer_list<std::int64_t> values) {
        u32(static_cast<std::uint32_t>(values.size()));
        for (const std::int64_t value : values) {
            i64(value);
        }
        return *this;
    }
    LiteralBytes& text(const std::string& value) {
        u32(static_cast<std::uint32_t>(value.size()));
        bytes.insert(bytes.end(), value.begin(), value.end());
        return *this;
    }
};

Bytes encoded(const Event& event) {
    Bytes bytes;
    ByteWriter out(bytes);
    EventCodec::encode(out, event);
    return bytes;
}

/// The body after `u8 kind | u32 bodyLength`: step, layer, sequence, then the payload.
Bytes framed(std::uint8_t kind, std::int64_t step, std::uint64_t sequence, const Bytes& payload) {
    LiteralBytes body;
    body.i64(step).u32(0xFFFFFFFFU).i64(static_cast<std::int64_t>(sequence)); // layer -1 as i32
    body.bytes.insert(body.bytes.end(), payload.begin(), payload.end());
    LiteralBytes frame;
    frame.u8(kind).u32(static_cast<std::uint32_t>(body.bytes.size()));
    frame.bytes.insert(frame.bytes.end(), body.bytes.begin(), body.bytes.end());
    return frame.bytes;
}

TEST(EventCodecTest, SpeculationRecordsAsTheFormatSpellsIt) {
    struct Case {
        const char* name;
        SpeculationEvent event;
        Bytes payload;
    };
    const Case cases[] = {
        {"two of three drafts kept, two layers",
         SpeculationEvent{DraftSource::PromptLookup, 12, {7, 8, 9}, " a b c", {2, 4, 6}, 2, {11, 11}, {14, 14}},
         LiteralBytes{}.u8(0).i64(12).list({7, 8, 9}).text(" a b c").list({2, 4, 6}).i64(2).list({11, 11}).list({14, 14}).bytes},
        {"no draft (no n-gram matched), no text",
         SpeculationEvent{DraftSource::PromptLookup, 5, {}, "", {}, 0, {4}, {5}},
         LiteralBytes{}.u8(0).i64(5).list({}).text("").list({}).i64(0).list({4}).list({5}).bytes},
        {"an assistant model's draft, all rejected",
         SpeculationEvent{DraftSource::AssistantModel, 30, {1, 2}, "xy", {1, 2}, 0, {29, 29, 29}, {30, 30, 30}},
         LiteralBytes{}.u8(1).i64(30).list({1, 2}).text("xy").list({1, 2}).i64(0).list({29, 29, 29}).list({30, 30, 30}).bytes},
    };
    for (const Case& c : cases) {
        const Event event{4, -1, 77, c.event};
        const Bytes expected = framed(29, 4, 77, c.payload);
        EXPECT_EQ(encoded(event), expected) << c.name;
        ByteReader in(expected);
        const std::optional<Event> decoded = EventCodec::decode(in);
        ASSERT_TRUE(decoded.has_value()) << c.name;
        EXPECT_EQ(*decoded, event) << c.name;
        EXPECT_EQ(in.remaining(), 0U) << c.name;
    }
}

TEST(EventCodecTest, SpeculationPiecesAndTheRollbackTheyName) {
    const SpeculationEvent event{DraftSource::PromptLookup, 12, {7, 8, 9}, " a b c", {2, 4, 6}, 2, {11}, {14}};
    EXPECT_EQ(event.drafted(), 3);
    EXPECT_EQ(event.piece(0), " a");
    EXPECT_EQ(event.piece(2), " c");
    EXPECT_EQ(event.piece(3), "");
    // Piece ends that run past the text name nothing rather than reading past it.
    const SpeculationEvent damaged{DraftSource::PromptLookup, 0, {7}, "ab", {5}, 0, {}, {}};
    EXPECT_EQ(damaged.piece(0), "");
    EXPECT_EQ(toString(DraftSource::PromptLookup), "prompt_lookup");
    EXPECT_EQ(toString(DraftSource::AssistantModel), "assistant_model");
    EXPECT_EQ(toString(EventKind::Speculation), "speculation");
}

TEST(EventCodecTest, SpeculationThatKeepsMoreThanItDraftedIsRefused) {
    const struct {
        SpeculationEvent event;
        const char* message;
    } refused[] = {
        {{DraftSource::PromptLookup, 1, {7}, "", {}, 2, {1}, {3}},
         "a speculation accepts 2 of 1 drafts with 0 piece ends and 1/1 layer lengths"},
        {{DraftSource::PromptLookup, 1, {7, 8}, "ab", {1}, 0, {1}, {2}},
         "a speculation accepts 0 of 2 drafts with 1 piece ends and 1/1 layer lengths"},
        {{DraftSource::PromptLookup, 1, {7}, "", {}, 0, {1, 1}, {2}},
         "a speculation accepts 0 of 1 drafts with 0 piece ends and 2/1 layer lengths"},
    };
    for (const auto& c : refused) {
        const Bytes bytes = encoded(Event{0, -1, 0, c.event});
        ByteReader in(bytes);
        try {
            EventCodec::decode(in);
            ADD_FAILURE() << "decoded: " << c.message;
        } catch (const EventCodec::Invalid& error) {
            EXPECT_EQ(std::string(error.what()), c.message);
        }
    }
    // An unknown draft source is a newer writer's or damage: refused by name.
    Bytes bytes = encoded(Event{0, -1, 0, SpeculationEvent{}});
    bytes[5 + 8 + 4 + 8] = 7; // the source, right after the body's step, layer and sequence
    ByteReader in(bytes);
    EXPECT_THROW(EventCodec::decode(in), EventCodec::Invalid);
}

} // namespace
} // namespace kvscope::trace
