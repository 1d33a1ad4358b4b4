// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/MetricsScraper.h"

#include "kvscope/attach/PrometheusText.h"
#include "kvscope/paged/PagedError.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kvscope::attach {

namespace {

struct AddressList {
    addrinfo* head = nullptr;
    ~AddressList() {
        if (head != nullptr) {
            freeaddrinfo(head);
        }
    }
};

struct Socket {
    int fd = -1;
    ~Socket() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

using Clock = std::chrono::steady_clock;

int remainingMs(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

/// Waits for `events` on fd until the deadline; false on timeout or error (EINTR retried).
bool waitFor(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        pollfd item{fd, events, 0};
        const int ready = ::poll(&item, 1, remainingMs(deadline));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        return ready > 0 && (item.revents & (events | POLLHUP)) != 0;
    }
}

} // namespace

MetricsScraper::MetricsScraper(const std::string& url) : m_url(url) {
    constexpr std::string_view scheme = "http://";
    if (!std::string_view(url).starts_with(scheme)) {
        throw paged::PagedError("metrics address '" + url +
                                "' is not plain HTTP: give it as http://HOST:PORT/metrics (vLLM's server address "
                                "with /metrics; https is not supported)");
    }
    std::string rest = url.substr(scheme.size());
    if (const std::size_t slash = rest.find('/'); slash != std::string::npos) {
        m_path = rest.substr(slash);
        rest.resize(slash);
    }
    if (rest.starts_with('[')) { // [IPv6]:port
        const std::size_t close = rest.find(']');
        if (close == std::string::npos) {
            throw paged::PagedError("metrics address '" + url + "' has an unclosed '[': write http://[::1]:8000/metrics");
        }
        m_host = rest.substr(1, close - 1);
        if (close + 1 < rest.size() && rest[close + 1] == ':') {
            m_port = rest.substr(close + 2);
        }
    } else if (const std::size_t colon = rest.rfind(':'); colon != std::string::npos) {
        m_host = rest.substr(0, colon);
        m_port = rest.substr(colon + 1);
    } else {
        m_host = rest;
    }
    if (m_host.empty() || m_port.empty() || m_port.find_first_not_of("0123456789") != std::string::npos) {
        throw paged::PagedError("metrics address '" + url +
                                "' names no host and port: give it as http://HOST:PORT/metrics, e.g. "
                                "http://127.0.0.1:8000/metrics");
    }
}

std::optional<std::string> MetricsScraper::get(int timeoutMs) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    AddressList addresses;
    if (const int failed = ::getaddrinfo(m_host.c_str(), m_port.c_str(), &hints, &addresses.head); failed != 0) {
        m_lastError = "cannot resolve " + m_host + ": " + gai_strerror(failed);
        return std::nullopt;
    }
    Socket socket;
    for (addrinfo* address = addresses.head; address != nullptr && socket.fd < 0; address = address->ai_next) {
        const int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                                address->ai_protocol);
        if (fd < 0) {
            continue;
        }
        Socket attempt{fd};
        if (::connect(fd, address->ai_addr, address->ai_addrlen) != 0 && errno != EINPROGRESS) {
            continue;
        }
        if (!waitFor(fd, POLLOUT, deadline)) {
            continue;
        }
        int error = 0;
        socklen_t length = sizeof error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
            continue;
        }
        socket.fd = std::exchange(attempt.fd, -1);
    }
    if (socket.fd < 0) {
        m_lastError = "cannot connect to " + m_host + ":" + m_port + " (is the server running, with this port?)";
        return std::nullopt;
    }
    // HTTP/1.0: the server closes when done and sends no chunked encoding.
    const std::string request = "GET " + m_path + " HTTP/1.0\r\nHost: " + m_host + "\r\nAccept: text/plain\r\n\r\n";
    std::size_t sent = 0;
    while (sent < request.size()) {
        if (!waitFor(socket.fd, POLLOUT, deadline)) {
            m_lastError = "timed out sending to " + m_url;
            return std::nullopt;
        }
        const ssize_t n = ::send(socket.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            m_lastError = std::string("cannot send to ") + m_url + ": " + std::strerror(errno);
            return std::nullopt;
        }
        sent += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    std::string response;
    char buffer[16384];
    for (;;) {
        if (!waitFor(socket.fd, POLLIN, deadline)) {
            m_lastError = "timed out reading " + m_url;
            return std::nullopt;
        }
        const ssize_t n = ::recv(socket.fd, buffer, sizeof buffer, 0);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                continue;
            }
            m_lastError = std::string("cannot read ") + m_url + ": " + std::strerror(errno);
            return std::nullopt;
        }
        response.append(buffer, static_cast<std::size_t>(n));
        if (response.size() > kMaxResponseBytes) {
            m_lastError = m_url + " sent more than 16 MiB: not a metrics page";
            return std::nullopt;
        }
    }
    const std::size_t headerEnd = response.find("\r\n\r\n");
    const std::size_t lineEnd = response.find("\r\n");
    if (headerEnd == std::string::npos || !response.starts_with("HTTP/")) {
        m_lastError = m_url + " did not answer as an HTTP server";
        return std::nullopt;
    }
    const std::string statusLine = response.substr(0, lineEnd);
    if (statusLine.find(" 200") == std::string::npos) {
        m_lastError = m_url + " answered '" + statusLine + "'";
        return std::nullopt;
    }
    return response.substr(headerEnd + 4);
}

std::optional<MetricsScraper::PrefixCache> MetricsScraper::scrape(int timeoutMs) {
    const std::optional<std::string> page = get(timeoutMs);
    if (!page) {
        return std::nullopt;
    }
    const auto queries = PrometheusText::counter(*page, "vllm:prefix_cache_queries_total");
    const auto hits = PrometheusText::counter(*page, "vllm:prefix_cache_hits_total");
    const auto counterLike = [](const std::optional<double>& value) {
        return value && *value >= 0 && *value < 9.0e18;
    };
    if (!counterLike(queries) || !counterLike(hits)) {
        m_lastError = m_url + " has no vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total counters "
                              "(is it a vLLM server's /metrics?)";
        return std::nullopt;
    }
    m_lastError.clear();
    return PrefixCache{std::llround(*queries), std::llround(*hits)};
}

} // namespace kvscope::attach
