// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvscope::synthetic {

/// Outcome of one TimelineBenchmark::run; the first five fields are the CLI's JSON contract.
struct TimelineBenchmarkResult {
    std::int32_t layers = 0;
    std::int64_t tokens = 0;
    std::uint64_t events = 0;
    double stateMsMedian = 0.0;
    double stateMsMax = 0.0;
    /// Extra detail for humans and tests; not part of the JSON.
    int queries = 0;
    std::int64_t keyframeInterval = 0;
    double buildMs = 0.0; ///< generating the session into the timeline
    std::size_t timelineBytes = 0; ///< Timeline::memoryBytes()
};

/// Times trace::Timeline::stateAt on a synthetic session (`kvscope-cli bench timeline`).
class TimelineBenchmark {
public:
    /// Builds a SyntheticSession of `layers` x `tokens` decode steps into a Timeline, then times
    /// `queries` stateAt calls at random steps drawn from `seed`.
    static TimelineBenchmarkResult run(std::int32_t layers, std::int64_t tokens, int queries = 1000,
                                       std::uint64_t seed = 1);

    /// {"layers", "tokens", "events", "state_ms_median", "state_ms_max"} as one JSON object.
    static std::string toJson(const TimelineBenchmarkResult& result);
};

} // namespace kvscope::synthetic
