// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/KvCacheEvent.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace kvscope::paged {

/// Writes a pool's KvCacheEvents to a file as vLLM publishes them, one JSON object per line
/// (`kvscope-cli serve --kv-events FILE`): `type`, `block_hashes` as integers, `parent_block_hash`,
/// `token_ids`, `block_size`, `lora_id`, `medium`, `lora_name`, `extra_keys`, `group_idx`,
/// `kv_cache_spec_kind`, `kv_cache_spec_sliding_window`, the fields vLLM leaves out when unset left out.
class KvEventsJsonl : public KvEventSink {
public:
    /// Throws PagedError naming the file when it cannot be written.
    explicit KvEventsJsonl(const std::filesystem::path& file);
    void publish(const KvCacheEvent& event) override;
    std::int64_t eventsWritten() const { return m_events; }

    /// The event as one line of JSON (no newline).
    static std::string line(const KvCacheEvent& event);

private:
    std::filesystem::path m_path;
    std::ofstream m_out;
    std::int64_t m_events = 0;
};

} // namespace kvscope::paged
