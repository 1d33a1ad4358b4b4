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

/// A serving workload (docs/workloads.md): `{"description": "...", "requests": [{"id", "arrival_step",
/// "prompt" | "prompt_ids", "max_tokens", "ignore_eos", "cache_salt"}]}`. Parsing checks every field and
/// throws PagedError naming the request, the field, the allowed values and the fix.
struct Workload {
    std::string description;
    std::vector<WorkloadRequest> requests;

    static Workload parse(std::string_view json, const std::string& source = "workload");
    static Workload load(const std::filesystem::path& path);
    bool operator==(const Workload&) const = default;
};

} // namespace kvscope::paged
