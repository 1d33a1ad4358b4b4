// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/KvEventDecoder.h"

#include "kvscope/paged/MsgpackValue.h"
#include "kvscope/paged/PagedError.h"

namespace kvscope::paged {

namespace {

using Kind = MsgpackValue::Kind;

/// A field that does not decode: the event is skipped with this message.
struct BadField {
    std::string why;
};

std::string wrongType(std::string_view field, const MsgpackValue& value, std::string_view expected) {
    return "field `" + std::string(field) + "` is " + std::string(MsgpackValue::describe(value.kind())) +
           ", expected " + std::string(expected);
}

HashValue hashOf(std::string_view field, const MsgpackValue& value) {
    if (value.isInteger())
        return value.unsignedInteger();
    if (value.kind() == Kind::Bytes) {
        // vLLM's int form is int.from_bytes(digest, "big") & (2**64 - 1): the last 8 bytes.
        const std::string& bytes = value.text();
        HashValue hash = 0;
        for (std::size_t i = bytes.size() > 8 ? bytes.size() - 8 : 0; i < bytes.size(); ++i)
            hash = (hash << 8) | static_cast<std::uint8_t>(bytes[i]);
        return hash;
    }
    throw BadField{wrongType(field, value, "an integer or bytes (a block hash)")};
}

std::vector<HashValue> hashesOf(std::string_view field, const MsgpackValue* value) {
    if (value == nullptr)
        throw BadField{"field `" + std::string(field) + "` is missing"};
    if (value->kind() != Kind::Array)
        throw BadField{wrongType(field, *value, "an array of block hashes")};
    std::vector<HashValue> hashes;
    hashes.reserve(value->items().size());
    for (const MsgpackValue& item : value->items())
        hashes.push_back(hashOf(field, item));
    return hashes;
}

std::optional<std::int64_t> integerOf(std::string_view field, const MsgpackValue* value) {
    if (value == nullptr || value->isNil())
        return std::nullopt;
    if (!value->isInteger())
        throw BadField{wrongType(field, *value, "an integer")};
    return value->integer();
}

std::string textOf(std::string_view field, const MsgpackValue* value) {
    if (value == nullptr || value->isNil())
        return {};
    if (value->kind() != Kind::Text)
        throw BadField{wrongType(field, *value, "text")};
    return value->text();
}

/// vLLM's untagged extra keys per block: the cache salt is the text that is not the LoRA name.
std::vector<std::string> saltsOf(const MsgpackValue* extraKeys, std::size_t blocks, const std::string& loraName) {
    std::vector<std::string> salts(blocks);
    if (extraKeys == nullptr || extraKeys->kind() != Kind::Array)
        return salts;
    for (std::size_t i = 0; i < blocks && i < extraKeys->items().size(); ++i) {
        const MsgpackValue& keys = extraKeys->items()[i];
        if (keys.kind() != Kind::Array)
            continue;
        for (const MsgpackValue& key : keys.items()) {
            if (key.kind() == Kind::Text && key.text() != loraName) {
                salts[i] = key.text();
                break;
            }
        }
    }
    return salts;
}

/// The fields of an event, by name: a tagged map as it is, a positional array named in the order older vLLM
/// wrote them.
class EventFields {
public:
    EventFields(const MsgpackValue& event, std::string type) : m_event(event), m_type(std::move(type)) {}
    const MsgpackValue* operator[](std::string_view name) const {
        if (m_event.kind() == Kind::Map)
            return m_event.field(name);
        static const std::vector<std::string_view> stored = {"block_hashes", "parent_block_hash", "token_ids",
                                                             "block_size",   "lora_id",           "medium",
                                                             "lora_name"};
        static const std::vector<std::string_view> removed = {"block_hashes", "medium"};
        const auto& order = m_type == "BlockStored" ? stored : removed;
        for (std::size_t i = 0; i < order.size(); ++i)
            if (order[i] == name)
                return i + 1 < m_event.items().size() ? &m_event.items()[i + 1] : nullptr;
        return nullptr;
    }

private:
    const MsgpackValue& m_event;
    std::string m_type;
};

KvCacheEvent eventOf(const MsgpackValue& value, const std::string& type) {
    const EventFields fields(value, type);
    KvCacheEvent event;
    if (type == "AllBlocksCleared") {
        event.type = KvCacheEvent::Type::AllBlocksCleared;
        event.medium.clear();
        return event;
    }
    event.blockHashes = hashesOf("block_hashes", fields["block_hashes"]);
    event.medium = textOf("medium", fields["medium"]);
    event.groupIdx = static_cast<std::int32_t>(integerOf("group_idx", fields["group_idx"]).value_or(0));
    if (type == "BlockRemoved") {
        event.type = KvCacheEvent::Type::BlockRemoved;
        return event;
    }
    event.type = KvCacheEvent::Type::BlockStored;
    if (const MsgpackValue* parent = fields["parent_block_hash"]; parent != nullptr && !parent->isNil())
        event.parentBlockHash = hashOf("parent_block_hash", *parent);
    const MsgpackValue* tokens = fields["token_ids"];
    if (tokens == nullptr || tokens->kind() != Kind::Array)
        throw BadField{tokens == nullptr ? std::string("field `token_ids` is missing")
                                         : wrongType("token_ids", *tokens, "an array of token ids")};
    event.tokenIds.reserve(tokens->items().size());
    for (const MsgpackValue& token : tokens->items()) {
        if (!token.isInteger())
            throw BadField{wrongType("token_ids", token, "integers")};
        event.tokenIds.push_back(token.integer());
    }
    event.blockSize = integerOf("block_size", fields["block_size"]).value_or(0);
    if (event.blockSize < 1)
        throw BadField{"field `block_size` is missing or below 1"};
    const std::string loraName = textOf("lora_name", fields["lora_name"]);
    event.cacheSalts = saltsOf(fields["extra_keys"], event.blockHashes.size(), loraName);
    // SGLang names the salt itself (its first block's).
    if (const std::string salt = textOf("cache_salt", fields["cache_salt"]); !salt.empty() && !event.cacheSalts.empty())
        event.cacheSalts.front() = salt;
    event.specKind = textOf("kv_cache_spec_kind", fields["kv_cache_spec_kind"]);
    event.slidingWindow = integerOf("kv_cache_spec_sliding_window", fields["kv_cache_spec_sliding_window"]);
    return event;
}

} // namespace

KvEventBatch KvEventDecoder::decode(std::span<const std::uint8_t> payload) {
    if (payload.size() > kMaxPayloadBytes)
        throw PagedError("a KV event message of " + std::to_string(payload.size()) + " bytes is refused: at most " +
                         std::to_string(kMaxPayloadBytes) + " bytes are read (a vLLM step's batch is kilobytes)");
    const MsgpackValue batch = MsgpackValue::read(payload);
    if (batch.kind() != Kind::Array || batch.items().size() < 2)
        throw PagedError("a KV event message must be an array [timestamp, events, rank]; this one is " +
                         std::string(MsgpackValue::describe(batch.kind())) +
                         (batch.kind() == Kind::Array ? " of " + std::to_string(batch.items().size()) + " items" : ""));
    const MsgpackValue& timestamp = batch.items()[0];
    const MsgpackValue& events = batch.items()[1];
    if (timestamp.kind() != Kind::Float && !timestamp.isInteger())
        throw PagedError("a KV event message's timestamp is " + std::string(MsgpackValue::describe(timestamp.kind())) +
                         ", expected a number of seconds");
    if (events.kind() != Kind::Array)
        throw PagedError("a KV event message's events are " + std::string(MsgpackValue::describe(events.kind())) +
                         ", expected an array");
    KvEventBatch decoded;
    decoded.timestamp = timestamp.number();
    if (batch.items().size() > 2 && batch.items()[2].isInteger())
        decoded.rank = batch.items()[2].integer();
    for (std::size_t index = 0; index < events.items().size(); ++index) {
        const MsgpackValue& event = events.items()[index];
        std::string type;
        if (event.kind() == Kind::Map) {
            const MsgpackValue* tag = event.field("type");
            type = tag != nullptr && tag->kind() == Kind::Text ? tag->text() : std::string();
        } else if (event.kind() == Kind::Array && !event.items().empty() && event.items()[0].kind() == Kind::Text) {
            type = event.items()[0].text();
        }
        const std::string where = "event " + std::to_string(index);
        if (type != "BlockStored" && type != "BlockRemoved" && type != "AllBlocksCleared") {
            decoded.notices.push_back(where + (type.empty() ? std::string(" has no type") : " of type `" + type + "`") +
                                      " ignored (known: BlockStored, BlockRemoved, AllBlocksCleared)");
            continue;
        }
        try {
            decoded.events.push_back(eventOf(event, type));
        } catch (const BadField& bad) {
            decoded.notices.push_back(where + " (" + type + ") ignored: " + bad.why);
        }
    }
    return decoded;
}

} // namespace kvscope::paged
