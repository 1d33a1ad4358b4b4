// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for workload files (docs/workloads.md): any bytes either parse into a workload or raise
// PagedError; nothing else may escape, crash or leak.
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Workload.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto workload = kvscope::paged::Workload::parse(
            std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        // Every parsed request is well formed.
        for (const auto& request : workload.requests) {
            if (request.id.empty() || request.maxTokens < 1 || request.arrivalStep < 0 ||
                (request.prompt.has_value() == !request.promptIds.empty()))
                __builtin_trap();
        }
        // A suggested pool holds only values the pool options accept.
        const auto& pool = workload.pool;
        using kvscope::paged::WorkloadPool;
        if ((pool.blockSize && (*pool.blockSize < 1 || *pool.blockSize > WorkloadPool::kMaxBlockSize)) ||
            (pool.numBlocks && (*pool.numBlocks < 1 || *pool.numBlocks > WorkloadPool::kMaxNumBlocks)) ||
            (pool.maxNumBatchedTokens && (*pool.maxNumBatchedTokens < 1 ||
                                          *pool.maxNumBatchedTokens > WorkloadPool::kMaxNumBatchedTokens)) ||
            (pool.maxNumSeqs && (*pool.maxNumSeqs < 1 || *pool.maxNumSeqs > WorkloadPool::kMaxNumSeqs)))
            __builtin_trap();
    } catch (const kvscope::paged::PagedError&) {
    }
    return 0;
}
