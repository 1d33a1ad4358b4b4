// SPDX-License-Identifier: GPL-3.0-or-later
// A server's /metrics: the Prometheus text reader on vLLM's page layout, and the HTTP client against a local server.
#include "kvscope/attach/MetricsScraper.h"
#include "kvscope/attach/PrometheusText.h"
#include "kvscope/paged/PagedError.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace kvscope;

namespace {

// The layout of vLLM 0.32's page (prometheus_client): HELP and TYPE lines, one sample per engine with labels,
// a `_created` gauge beside each counter, and a metric whose name starts with the one asked for.
constexpr const char* kVllmPage =
    "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
    "# TYPE vllm:prefix_cache_queries_total counter\n"
    "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"smollm2\"} 317.0\n"
    "vllm:prefix_cache_queries_total{engine=\"1\",model_name=\"a}b \\\"quoted\\\"\"} 3.0\n"
    "vllm:prefix_cache_queries_created{engine=\"0\",model_name=\"smollm2\"} 1.7649e+09\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"smollm2\"} 128.0\n"
    "vllm:prefix_cache_hits_total_bogus 5\n";

TEST(MetricsScraperTest, PrometheusTextSumsTheSamplesOfOneNameOnly) {
    EXPECT_EQ(attach::PrometheusText::counter(kVllmPage, "vllm:prefix_cache_queries_total"), 320.0);
    EXPECT_EQ(attach::PrometheusText::counter(kVllmPage, "vllm:prefix_cache_hits_total"), 128.0);
    EXPECT_EQ(attach::PrometheusText::counter(kVllmPage, "vllm:num_preemptions_total"), std::nullopt);
    EXPECT_EQ(attach::PrometheusText::counter("x 1e400\nx nan\nx{a=\"1\" 4\nx\t2 1700000000\n", "x"), 2.0)
        << "infinite, NaN and unclosed-label samples ignored; a timestamp after the value allowed";
}

/// Answers every connection with `response`, once per connection.
class LocalHttpServer {
public:
    explicit LocalHttpServer(std::string response) : m_response(std::move(response)) {
        m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
        ::listen(m_listener, 4);
        socklen_t length = sizeof address;
        ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &length);
        m_port = ntohs(address.sin_port);
        m_thread = std::thread([this] {
            for (;;) {
                const int client = ::accept(m_listener, nullptr, nullptr);
                if (client < 0 || m_stop)
                    break;
                char request[4096];
                const ssize_t got = ::recv(client, request, sizeof request, 0);
                m_request.assign(request, got > 0 ? static_cast<std::size_t>(got) : 0);
                ::send(client, m_response.data(), m_response.size(), MSG_NOSIGNAL);
                ::close(client);
            }
        });
    }
    ~LocalHttpServer() {
        m_stop = true;
        ::shutdown(m_listener, SHUT_RDWR);
        ::close(m_listener);
        m_thread.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/metrics"; }
    const std::string& request() const { return m_request; }

private:
    std::string m_response;
    std::string m_request;
    int m_listener = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

TEST(MetricsScraperTest, ReadsTheHitCountersOverHttp) {
    LocalHttpServer server(std::string("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n") + kVllmPage);
    attach::MetricsScraper scraper(server.url());
    const auto counters = scraper.scrape(2000);
    ASSERT_TRUE(counters) << scraper.lastError();
    EXPECT_EQ(counters->queries, 320);
    EXPECT_EQ(counters->hits, 128);
    EXPECT_TRUE(server.request().starts_with("GET /metrics HTTP/1.0\r\n")) << server.request();
}

TEST(MetricsScraperTest, SaysWhyAPageGivesNoCounters) {
    {
        LocalHttpServer server("HTTP/1.1 404 Not Found\r\n\r\nno");
        attach::MetricsScraper scraper(server.url());
        EXPECT_FALSE(scraper.scrape(2000));
        EXPECT_EQ(scraper.lastError(), server.url() + " answered 'HTTP/1.1 404 Not Found'");
    }
    {
        LocalHttpServer server("HTTP/1.1 200 OK\r\n\r\nsglang:cache_hit_rate 0.5\n");
        attach::MetricsScraper scraper(server.url());
        EXPECT_FALSE(scraper.scrape(2000));
        EXPECT_NE(scraper.lastError().find("has no vllm:prefix_cache_queries_total"), std::string::npos);
    }
    attach::MetricsScraper closed("http://127.0.0.1:1/metrics");
    EXPECT_FALSE(closed.scrape(1000));
    EXPECT_NE(closed.lastError().find("cannot connect to 127.0.0.1:1"), std::string::npos) << closed.lastError();
}

TEST(MetricsScraperTest, RefusesAddressesItCannotUse) {
    for (const char* url : {"https://h:1/metrics", "127.0.0.1:8000", "http://:8000/metrics", "http://h:port/metrics",
                            "http://[::1/metrics"}) {
        EXPECT_THROW(attach::MetricsScraper{url}, paged::PagedError) << url;
    }
    EXPECT_NO_THROW(attach::MetricsScraper("http://[::1]:8000/metrics"));
    EXPECT_NO_THROW(attach::MetricsScraper("http://localhost"));
}

} // namespace
