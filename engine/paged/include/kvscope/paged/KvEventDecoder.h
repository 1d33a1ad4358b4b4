// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/KvCacheEvent.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kvscope::paged {

/// One message of a server's KV event stream, decoded.
struct KvEventBatch {
    double timestamp = 0;            ///< the server's clock, seconds
    std::optional<std::int64_t> rank; ///< vLLM's data_parallel_rank, SGLang's attn_dp_rank
    std::vector<KvCacheEvent> events;
    /// What was skipped and why (an unknown event type, a field of the wrong type): the rest is kept.
    std::vector<std::string> notices;
};

/// Decodes the payload frame of a vLLM or SGLang KV event message (MessagePack) into KvCacheEvents, by
/// field name and tolerantly: vLLM's tagged maps (0.26 on) and its older positional arrays, SGLang's batch,
/// unknown fields and event types ignored (said in notices), block hashes as integers (the low 64 bits) or
/// bytes (their last 8, big-endian: the integer vLLM itself publishes). Everything on the socket is
/// untrusted: a payload that is not such a message is refused with PagedError naming the problem.
class KvEventDecoder {
public:
    /// Larger payloads are refused unread (a vLLM step's batch is kilobytes).
    static constexpr std::size_t kMaxPayloadBytes = 64U << 20U;

    static KvEventBatch decode(std::span<const std::uint8_t> payload);
};

} // namespace kvscope::paged
