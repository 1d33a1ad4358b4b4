// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string_view>

namespace kvscope::attach {

/// Reads a counter from a server's /metrics page (Prometheus' text exposition format): the sum of every
/// sample of `name` (vLLM names its counters `vllm:prefix_cache_hits_total`, one sample per engine). Untrusted
/// text: lines that are not samples, values that are not numbers, and pages over kMaxBytes are ignored.
class PrometheusText {
public:
    static constexpr std::size_t kMaxBytes = 16U << 20U;
    /// The sum, or nullopt when the page has no sample of `name`.
    static std::optional<double> counter(std::string_view page, std::string_view name);
};

} // namespace kvscope::attach
