// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::paged {

/// One request of a workload file as written: exactly one of prompt (text, tokenized by the model's
/// tokenizer) and promptIds.
struct WorkloadRequest {
    std::string id;
    std::int64_t arrivalStep = 0;
    std::optional<std::string> prompt;
    std::vector<TokenId> promptIds;
    std::int64_t maxTokens = 16;
    bool ignoreEos = false;
    std::string cacheSalt;
    bool operator==(const WorkloadRequest&) const = default;
};

/// The pool a workload suggests (its "pool" object): the settings under which it shows what it is for (a
/// pool small enough to evict and preempt). Unset fields: the serving defaults. Used where the user gives no
/// pool setting (ServingOptionTable::withSuggestedPool; File > New session > Serving fills it in).
struct WorkloadPool {
    /// Largest values accepted, the New session dialog's limits.
    static constexpr std::int64_t kMaxBlockSize = 4096;
    static constexpr std::int64_t kMaxNumBlocks = 1 << 20;
    static constexpr std::int64_t kMaxNumBatchedTokens = 1 << 20;
    static constexpr std::int64_t kMaxNumSeqs = 4096;

    std::optional<std::int64_t> blockSize;
    std::optional<std::int32_t> numBlocks;
    std::optional<std::int64_t> maxNumBatchedTokens;
    std::optional<std::int32_t> maxNumSeqs;
    bool empty() const { return !blockSize && !numBlocks && !maxNumBatchedTokens && !maxNumSeqs; }
    bool operator==(const WorkloadPool&) const = default;
};

/// A serving workload (docs/workloads.md): `{"description": "...", "pool": {"block_size", "num_blocks",
/// "max_num_batched_tokens", "max_num_seqs"}, "requests": [{"id", "arrival_step", "prompt" | "prompt_ids",
/// "max_tokens", "ignore_eos", "cache_salt"}]}`. Parsing checks every field and throws PagedError naming the
/// request, the field, the allowed values and the fix.
struct Workload {
    std::string description;
    WorkloadPool pool;
    std::vector<WorkloadRequest> requests;

    static Workload parse(std::string_view json, const std::string& source = "workload");
    static Workload load(const std::filesystem::path& path);
    bool operator==(const Workload&) const = default;
};

} // namespace kvscope::paged
