// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/KvEventsJsonl.h"

#include "kvscope/paged/PagedError.h"

#include <nlohmann/json.hpp>

namespace kvscope::paged {

KvEventsJsonl::KvEventsJsonl(const std::filesystem::path& file) : m_path(file), m_out(file, std::ios::trunc) {
    if (!m_out)
        throw PagedError("cannot write the KV events to " + file.string() +
                         ": check that its folder exists and is writable, or pass another --kv-events FILE");
}

std::string KvEventsJsonl::line(const KvCacheEvent& event) {
    nlohmann::ordered_json json;
    switch (event.type) {
    case KvCacheEvent::Type::BlockStored: {
        json["type"] = "BlockStored";
        json["block_hashes"] = event.blockHashes;
        json["parent_block_hash"] =
            event.parentBlockHash ? nlohmann::ordered_json(*event.parentBlockHash) : nlohmann::ordered_json();
        json["token_ids"] = event.tokenIds;
        json["block_size"] = event.blockSize;
        json["lora_id"] = nullptr;
        json["medium"] = event.medium;
        json["lora_name"] = nullptr;
        // vLLM's untagged extra keys: per block its cache salt, or null.
        nlohmann::ordered_json extraKeys = nlohmann::ordered_json::array();
        for (const std::string& salt : event.cacheSalts)
            extraKeys.push_back(salt.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json::array({salt}));
        json["extra_keys"] = extraKeys;
        json["group_idx"] = event.groupIdx;
        if (!event.specKind.empty())
            json["kv_cache_spec_kind"] = event.specKind;
        if (event.slidingWindow)
            json["kv_cache_spec_sliding_window"] = *event.slidingWindow;
        break;
    }
    case KvCacheEvent::Type::BlockRemoved:
        json["type"] = "BlockRemoved";
        json["block_hashes"] = event.blockHashes;
        json["medium"] = event.medium;
        json["group_idx"] = event.groupIdx;
        break;
    case KvCacheEvent::Type::AllBlocksCleared:
        json["type"] = "AllBlocksCleared";
        break;
    }
    return json.dump();
}

void KvEventsJsonl::publish(const KvCacheEvent& event) {
    m_out << line(event) << '\n';
    if (!m_out)
        throw PagedError("writing the KV events to " + m_path.string() + " failed (is the disk full?)");
    ++m_events;
}

} // namespace kvscope::paged
