// SPDX-License-Identifier: GPL-3.0-or-later
// Serving sessions for the paged views' tests: kvscope_paged's scheduler (torch-free) with a stand-in model
// that samples 5000 + the tokens a request holds, recorded into events with text for every token.
#pragma once

#include "kvscope/paged/Scheduler.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/trace/EventEmitter.h"
#include "kvscope/trace/RecordingSink.h"

#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace kvscope::gui::testing {

/// The text of the stand-in tokens: a system prompt (100..114), r1's and r2's own tokens, and outputs.
inline std::string pieceOf(paged::TokenId id) {
    static const std::map<paged::TokenId, std::string> pieces = {
        {100, "You"},     {101, " are"},    {102, " a"},       {103, " helpful"}, {104, " assistant"},
        {105, "."},       {106, " Answer"}, {107, " briefly"}, {108, " and"},     {109, " kindly"},
        {110, "."},       {111, " Say"},    {112, " the"},     {113, " KV"},      {114, " cache"},
        {5015, " keeps"}, {5016, " keys"},  {5017, " and"},    {5018, " values"},
    };
    const auto found = pieces.find(id);
    return found != pieces.end() ? found->second : " w" + std::to_string(id);
}

inline std::vector<paged::TokenId> ids(paged::TokenId first, std::int64_t count) {
    std::vector<paged::TokenId> out(static_cast<std::size_t>(count));
    std::iota(out.begin(), out.end(), first);
    return out;
}

inline std::vector<paged::TokenId> join(std::vector<paged::TokenId> a, const std::vector<paged::TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

inline paged::Request request(std::string id, std::int64_t arrival, std::vector<paged::TokenId> prompt,
                              std::int64_t maxTokens) {
    paged::Request r;
    r.id = std::move(id);
    r.arrivalStep = arrival;
    r.promptIds = std::move(prompt);
    r.maxTokens = maxTokens;
    r.ignoreEos = true;
    return r;
}

/// Runs the requests to the end and returns the recorded events.
inline std::vector<trace::Event> serve(const paged::PagedConfig& config,
                                       const std::vector<paged::Request>& requests, bool withText = true) {
    trace::RecordingSink sink;
    trace::EventEmitter emitter(&sink);
    paged::Scheduler scheduler(config, &emitter);
    if (withText) {
        scheduler.setPieceFunction(&pieceOf);
    }
    for (const paged::Request& r : requests) {
        scheduler.addRequest(r);
    }
    while (scheduler.hasUnfinishedRequests()) {
        const paged::SchedulerOutput output = scheduler.schedule();
        std::vector<paged::TokenId> sampled;
        for (const auto& scheduled : output.requests) {
            sampled.push_back(5000 + scheduler.request(scheduled.requestId).numTokens());
        }
        scheduler.update(output, sampled, -1);
    }
    return sink.events();
}

inline paged::PagedConfig exampleConfig() {
    paged::PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 10;
    config.maxNumBatchedTokens = 64;
    config.maxNumSeqs = 8;
    return config;
}

/// vLLM's prefix_caching.md example (docs/paged.md): r0 = 15 prompt tokens and 4 outputs; r1 = 14 tokens
/// sharing r0's first 10, arriving at step 4; r2 = 29 tokens sharing the first 12, arriving at step 5. r2's
/// table ends [0, 1, 2, 7, 8, 9, 4, 3], block 3 evicted (step 5, the last).
inline std::vector<trace::Event> designExample(bool withText = true) {
    return serve(exampleConfig(),
                 {request("r0", 0, ids(100, 15), 4), request("r1", 4, join(ids(100, 10), ids(200, 4)), 1),
                  request("r2", 5, join(ids(100, 12), ids(300, 17)), 1)},
                 withText);
}

/// r1 shares r0's two full prompt blocks and finishes while r0 still runs.
inline std::vector<trace::Event> sharedFinish() {
    return serve(exampleConfig(),
                 {request("r0", 0, ids(100, 8), 6), request("r1", 1, join(ids(100, 8), ids(200, 2)), 1)});
}

/// Four blocks for two requests growing to three blocks each: preemptions.
inline std::vector<trace::Event> preemption() {
    paged::PagedConfig config = exampleConfig();
    config.numBlocks = 4;
    return serve(config, {request("r0", 0, ids(100, 4), 8), request("r1", 0, ids(200, 4), 8)});
}

/// A built-in workload's text prompts as bytes (one token per byte, its piece the byte, as the byte
/// tokenizer has it), served by a stand-in model that answers every request with the same sentence.
inline std::vector<trace::Event> builtInWorkload(const std::string& name, const paged::PagedConfig& config) {
    const paged::Workload workload = paged::Workload::load(paged::WorkloadCatalog::resolve(name));
    static const std::string answer = " The library opens at nine and closes at six on weekdays.";
    trace::RecordingSink sink;
    trace::EventEmitter emitter(&sink);
    paged::Scheduler scheduler(config, &emitter);
    // Bytes are ids 0..255; the answer's bytes are 1000 + byte, so that prompts and answers never share.
    scheduler.setPieceFunction(
        [](paged::TokenId id) { return std::string(1, static_cast<char>(id % 1000)); });
    for (const paged::WorkloadRequest& described : workload.requests) {
        paged::Request r;
        r.id = described.id;
        r.arrivalStep = described.arrivalStep;
        for (const char c : described.prompt.value_or(std::string())) {
            r.promptIds.push_back(static_cast<unsigned char>(c));
        }
        r.maxTokens = described.maxTokens;
        r.ignoreEos = true;
        scheduler.addRequest(std::move(r));
    }
    while (scheduler.hasUnfinishedRequests()) {
        const paged::SchedulerOutput output = scheduler.schedule();
        std::vector<paged::TokenId> sampled;
        for (const auto& scheduled : output.requests) {
            const auto& request = scheduler.request(scheduled.requestId);
            const auto index = static_cast<std::size_t>(request.outputIds.size()) % answer.size();
            sampled.push_back(1000 + static_cast<unsigned char>(answer[index]));
        }
        scheduler.update(output, sampled, -1);
    }
    return sink.events();
}

} // namespace kvscope::gui::testing
