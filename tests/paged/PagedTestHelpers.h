// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/Request.h"
#include "kvscope/paged/Scheduler.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace kvscope::paged::testing {

/// count token ids first, first + 1, ...
inline std::vector<TokenId> tokens(TokenId first, std::int64_t count) {
    std::vector<TokenId> ids(static_cast<std::size_t>(count));
    std::iota(ids.begin(), ids.end(), first);
    return ids;
}

inline std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

inline Request makeRequest(std::string id, std::int64_t arrival, std::vector<TokenId> prompt,
                           std::int64_t maxTokens, bool ignoreEos = true, std::string salt = {}) {
    Request request;
    request.id = std::move(id);
    request.arrivalStep = arrival;
    request.promptIds = std::move(prompt);
    request.maxTokens = maxTokens;
    request.ignoreEos = ignoreEos;
    request.cacheSalt = std::move(salt);
    return request;
}

/// The model stand-in: a request samples 5000 + the number of tokens it holds (deterministic, never eos
/// unless eos is in that range).
inline std::vector<TokenId> fakeSample(const Scheduler& scheduler, const SchedulerOutput& output) {
    std::vector<TokenId> sampled;
    for (const auto& scheduled : output.requests)
        sampled.push_back(5000 + scheduler.request(scheduled.requestId).numTokens());
    return sampled;
}

/// One schedule + update with the fake model.
inline SchedulerOutput step(Scheduler& scheduler, TokenId eos = -1) {
    SchedulerOutput output = scheduler.schedule();
    scheduler.update(output, fakeSample(scheduler, output), eos);
    return output;
}

inline const ScheduledRequest* find(const SchedulerOutput& output, const std::string& id) {
    for (const auto& scheduled : output.requests)
        if (scheduled.requestId == id)
            return &scheduled;
    return nullptr;
}

} // namespace kvscope::paged::testing
