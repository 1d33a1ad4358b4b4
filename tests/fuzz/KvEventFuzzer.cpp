// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the KV event decoder (a vLLM or SGLang server's ZeroMQ payloads, untrusted): any bytes
// either decode into events or raise PagedError; nothing else may escape, crash, leak or allocate beyond a
// few times the input's size.
#include "kvscope/paged/KvEventDecoder.h"
#include "kvscope/paged/PagedError.h"

#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto batch = kvscope::paged::KvEventDecoder::decode(std::span(data, size));
        for (const auto& event : batch.events) {
            using Type = kvscope::paged::KvCacheEvent::Type;
            // A stored event has a block size and one salt slot per hash; the others carry no tokens.
            if (event.type == Type::BlockStored && (event.blockSize < 1 || event.cacheSalts.size() != event.blockHashes.size()))
                __builtin_trap();
            if (event.type != Type::BlockStored && !event.tokenIds.empty())
                __builtin_trap();
        }
    } catch (const kvscope::paged::PagedError&) {
    }
    return 0;
}
