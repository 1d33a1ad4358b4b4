// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/synthetic/TimelineBenchmark.h"

#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <vector>

namespace kvscope::synthetic {

using namespace kvscope::trace;

namespace {

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TimelineBenchmarkResult TimelineBenchmark::run(std::int32_t layers, std::int64_t tokens, int queries,
                                               std::uint64_t seed) {
    if (layers < 1 || tokens < 0 || queries < 1)
        throw std::invalid_argument("TimelineBenchmark: needs layers >= 1, tokens >= 0 and queries >= 1");

    SyntheticSessionOptions options;
    options.layers = layers;
    options.tokens = tokens;
    options.seed = seed;

    TimelineBenchmarkResult result;
    result.layers = layers;
    result.tokens = tokens;
    result.queries = queries;

    Timeline timeline;
    const auto buildStart = std::chrono::steady_clock::now();
    timeline.reserve(SyntheticSession::estimateEventCount(options));
    SyntheticSession::generate(options, timeline);
    result.buildMs = millisecondsSince(buildStart);
    result.events = timeline.eventCount();
    result.keyframeInterval = timeline.keyframeInterval();
    result.timelineBytes = timeline.memoryBytes();

    std::mt19937_64 random(seed);
    std::uniform_int_distribution<std::int64_t> anyStep(0, timeline.stepCount() - 1);
    std::vector<double> milliseconds;
    milliseconds.reserve(static_cast<std::size_t>(queries));
    std::int64_t checksum = 0; // consumes every result so the calls cannot be optimised away
    for (int query = 0; query < queries; ++query) {
        const std::int64_t step = anyStep(random);
        const auto start = std::chrono::steady_clock::now();
        const StepState state = timeline.stateAt(step);
        milliseconds.push_back(millisecondsSince(start));
        checksum += state.step + static_cast<std::int64_t>(state.layers.size());
    }
    if (checksum < 0)
        throw std::logic_error("TimelineBenchmark: impossible checksum");

    std::sort(milliseconds.begin(), milliseconds.end());
    const std::size_t middle = milliseconds.size() / 2;
    result.stateMsMedian = milliseconds.size() % 2 == 1
                               ? milliseconds[middle]
                               : (milliseconds[middle - 1] + milliseconds[middle]) / 2.0;
    result.stateMsMax = milliseconds.back();
    return result;
}

std::string TimelineBenchmark::toJson(const TimelineBenchmarkResult& result) {
    // ordered_json keeps the keys in the order CLI.md lists them.
    const nlohmann::ordered_json json{
        {"layers", result.layers},           {"tokens", result.tokens},
        {"events", result.events},           {"state_ms_median", result.stateMsMedian},
        {"state_ms_max", result.stateMsMax},
    };
    return json.dump();
}

} // namespace kvscope::synthetic
