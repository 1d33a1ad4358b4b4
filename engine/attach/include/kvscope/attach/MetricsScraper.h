// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvscope::attach {

/// Reads a server's prefix-cache counters from its /metrics page over plain HTTP (vLLM's OpenAI-compatible
/// server: http://HOST:PORT/metrics; vllm:prefix_cache_queries and _hits, in tokens, summed over engines).
class MetricsScraper {
public:
    struct PrefixCache {
        std::int64_t queries = 0;
        std::int64_t hits = 0;
        bool operator==(const PrefixCache&) const = default;
    };
    /// Pages larger than this are refused unread past it.
    static constexpr std::size_t kMaxResponseBytes = 16U << 20U;

    /// `url`: http://HOST[:PORT][/PATH] (PATH defaults to /metrics). Throws paged::PagedError naming a URL it
    /// cannot use.
    explicit MetricsScraper(const std::string& url);

    /// One GET, waiting at most timeoutMs in all. nullopt when the server cannot be reached, answers with an
    /// error, or its page has no prefix-cache counters: lastError() says which.
    std::optional<PrefixCache> scrape(int timeoutMs);
    const std::string& lastError() const { return m_lastError; }
    const std::string& url() const { return m_url; }

private:
    std::optional<std::string> get(int timeoutMs);

    std::string m_url;
    std::string m_host;
    std::string m_port = "80";
    std::string m_path = "/metrics";
    std::string m_lastError;
};

} // namespace kvscope::attach
