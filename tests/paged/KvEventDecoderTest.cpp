// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/KvEventDecoder.h"
#include "kvscope/paged/KvEventsJsonl.h"
#include "kvscope/paged/MsgpackValue.h"
#include "kvscope/paged/PagedError.h"

#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

using namespace kvscope::paged;

namespace {

// Payloads encoded by vLLM 0.32's own classes (KVEventBatch, BlockStored, ... with msgspec), by msgspec in
// older vLLM's positional form, and in SGLang's batch form: tests/data/kvevents.
std::vector<std::uint8_t> payload(const std::string& name) {
    std::ifstream in(std::string(KVSCOPE_TEST_DATA_DIR) + "/kvevents/" + name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<TokenId> tokenRange(TokenId first, TokenId last) {
    std::vector<TokenId> tokens(static_cast<std::size_t>(last - first + 1));
    std::iota(tokens.begin(), tokens.end(), first);
    return tokens;
}

std::string refusal(const std::vector<std::uint8_t>& bytes) {
    try {
        KvEventDecoder::decode(bytes);
    } catch (const PagedError& error) {
        return error.what();
    }
    return "";
}

} // namespace

TEST(KvEventDecoderTest, DecodesVllmTaggedMaps) {
    const KvEventBatch batch = KvEventDecoder::decode(payload("vllm-0.32-batch.msgpack"));
    EXPECT_DOUBLE_EQ(batch.timestamp, 1764970000.25);
    EXPECT_EQ(batch.rank, 0);
    EXPECT_TRUE(batch.notices.empty());
    ASSERT_EQ(batch.events.size(), 4U);
    const KvCacheEvent& first = batch.events[0];
    EXPECT_EQ(first.type, KvCacheEvent::Type::BlockStored);
    EXPECT_EQ(first.blockHashes, (std::vector<HashValue>{12204319907483556814ULL, 3809265657902063151ULL}));
    EXPECT_FALSE(first.parentBlockHash.has_value());
    EXPECT_EQ(first.tokenIds, tokenRange(1, 64));
    EXPECT_EQ(first.blockSize, 32);
    EXPECT_EQ(first.medium, "GPU");
    EXPECT_EQ(first.groupIdx, 0);
    EXPECT_EQ(first.cacheSalts, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(first.specKind, "full_attention");
    EXPECT_FALSE(first.slidingWindow.has_value());
    const KvCacheEvent& salted = batch.events[1];
    EXPECT_EQ(salted.parentBlockHash, 3809265657902063151ULL);
    EXPECT_EQ(salted.medium, "CPU");
    EXPECT_EQ(salted.groupIdx, 1);
    EXPECT_EQ(salted.cacheSalts, std::vector<std::string>{"tenant-b"});
    EXPECT_EQ(salted.specKind, "sliding_window");
    EXPECT_EQ(salted.slidingWindow, 512);
    EXPECT_EQ(batch.events[2].type, KvCacheEvent::Type::BlockRemoved);
    EXPECT_EQ(batch.events[2].blockHashes, std::vector<HashValue>{3809265657902063151ULL});
    EXPECT_EQ(batch.events[3].type, KvCacheEvent::Type::AllBlocksCleared);
}

// With VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 hashes are the 32-byte digests: the last 8 bytes big-endian are
// the integer vLLM publishes otherwise (sha256(b"x") here).
TEST(KvEventDecoderTest, ReadsByteHashesAsTheirIntegers) {
    const KvEventBatch batch = KvEventDecoder::decode(payload("vllm-0.32-bytes-hashes.msgpack"));
    ASSERT_EQ(batch.events.size(), 1U);
    EXPECT_EQ(batch.events[0].blockHashes, std::vector<HashValue>{154678297519343745ULL});
    EXPECT_FALSE(batch.rank.has_value());
}

TEST(KvEventDecoderTest, ReadsOlderPositionalArraysAndSglang) {
    const KvEventBatch old = KvEventDecoder::decode(payload("vllm-old-positional.msgpack"));
    ASSERT_EQ(old.events.size(), 2U);
    EXPECT_EQ(old.events[0].blockHashes, (std::vector<HashValue>{11, 12}));
    EXPECT_EQ(old.events[0].tokenIds, tokenRange(1, 4));
    EXPECT_EQ(old.events[0].blockSize, 2);
    EXPECT_EQ(old.events[0].medium, "GPU");
    EXPECT_EQ(old.events[1].type, KvCacheEvent::Type::BlockRemoved);

    const KvEventBatch sglang = KvEventDecoder::decode(payload("sglang-batch.msgpack"));
    EXPECT_EQ(sglang.rank, 1); // attn_dp_rank
    ASSERT_EQ(sglang.events.size(), 2U);
    EXPECT_EQ(sglang.events[0].parentBlockHash, 6U);
    EXPECT_EQ(sglang.events[0].medium, "CPU_PINNED");
    EXPECT_EQ(sglang.events[0].groupIdx, 0); // SGLang has no group_idx: the one group
    EXPECT_EQ(sglang.events[1].medium, "DISK");
    EXPECT_TRUE(sglang.notices.empty()); // its unknown field `future_field` is ignored silently
}

// A round trip through kvscope's own JSON lines keeps what the decoder reads.
TEST(KvEventDecoderTest, JsonLinesCarryVllmsFieldNames) {
    const KvEventBatch batch = KvEventDecoder::decode(payload("vllm-0.32-batch.msgpack"));
    EXPECT_EQ(KvEventsJsonl::line(batch.events[1]),
              R"({"type":"BlockStored","block_hashes":[2672236376417296660],"parent_block_hash":3809265657902063151,)"
              R"("token_ids":[65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96],)"
              R"("block_size":32,"lora_id":null,"medium":"CPU","lora_name":null,"extra_keys":[["tenant-b"]],"group_idx":1,)"
              R"("kv_cache_spec_kind":"sliding_window","kv_cache_spec_sliding_window":512})");
    EXPECT_EQ(KvEventsJsonl::line(batch.events[2]),
              R"({"type":"BlockRemoved","block_hashes":[3809265657902063151],"medium":"GPU","group_idx":0})");
    EXPECT_EQ(KvEventsJsonl::line(batch.events[3]), R"({"type":"AllBlocksCleared"})");
}

// Unknown event types and events with a field of the wrong type are skipped, said in notices; the rest is kept.
TEST(KvEventDecoderTest, SkipsWhatItCannotReadAndSaysWhy) {
    // [1.0, [{"type": "Unknown"}, {"type": "BlockRemoved", "block_hashes": "x"}, {"type": "AllBlocksCleared"}]]
    const std::vector<std::uint8_t> bytes = {
        0x92, 0x01, 0x93, 0x81, 0xa4, 't', 'y', 'p', 'e', 0xa7, 'U', 'n', 'k', 'n', 'o', 'w', 'n',
        0x82, 0xa4, 't', 'y', 'p', 'e', 0xac, 'B', 'l', 'o', 'c', 'k', 'R', 'e', 'm', 'o', 'v', 'e', 'd',
        0xac, 'b', 'l', 'o', 'c', 'k', '_', 'h', 'a', 's', 'h', 'e', 's', 0xa1, 'x',
        0x81, 0xa4, 't', 'y', 'p', 'e', 0xb0, 'A', 'l', 'l', 'B', 'l', 'o', 'c', 'k', 's', 'C', 'l', 'e', 'a', 'r', 'e', 'd'};
    const KvEventBatch batch = KvEventDecoder::decode(bytes);
    ASSERT_EQ(batch.events.size(), 1U);
    EXPECT_EQ(batch.events[0].type, KvCacheEvent::Type::AllBlocksCleared);
    EXPECT_EQ(batch.notices,
              (std::vector<std::string>{
                  "event 0 of type `Unknown` ignored (known: BlockStored, BlockRemoved, AllBlocksCleared)",
                  "event 1 (BlockRemoved) ignored: field `block_hashes` is text, expected an array of block hashes"}));
}

// Malformed, truncated, hostile: refused with a message naming the problem, never read past the end.
TEST(KvEventDecoderTest, RefusesMalformedMessagesNamingTheProblem) {
    std::vector<std::uint8_t> truncated = payload("vllm-0.32-batch.msgpack");
    truncated.resize(truncated.size() - 5);
    EXPECT_EQ(refusal(truncated).rfind("malformed MessagePack at byte ", 0), 0U) << refusal(truncated);
    EXPECT_NE(refusal(truncated).find("truncated"), std::string::npos);
    // An array announcing 2^32 - 1 items in 5 bytes: refused before anything is reserved.
    EXPECT_EQ(refusal({0xdd, 0xff, 0xff, 0xff, 0xff}),
              "malformed MessagePack at byte 5 of 5: truncated: 4294967295 more bytes announced, 0 left");
    EXPECT_EQ(refusal({0xc1}), "malformed MessagePack at byte 1 of 1: byte 0xc1 is reserved in MessagePack");
    EXPECT_EQ(refusal({0x91, 0x91, 0xc0, 0x00}),
              "malformed MessagePack at byte 3 of 4: 1 bytes follow the message's one value");
    std::vector<std::uint8_t> deep(40, 0x91);
    deep.push_back(0xc0);
    EXPECT_NE(refusal(deep).find("nested more than 32 deep"), std::string::npos);
    EXPECT_EQ(refusal({0xa3, 'a', 'b', 'c'}),
              "a KV event message must be an array [timestamp, events, rank]; this one is text");
    EXPECT_EQ(refusal({0x92, 0xa1, 't', 0x90}),
              "a KV event message's timestamp is text, expected a number of seconds");
    EXPECT_EQ(refusal({0x92, 0x01, 0xc0}), "a KV event message's events are nil, expected an array");
}
