// SPDX-License-Identifier: GPL-3.0-or-later
#include "CpuLoad.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

namespace kvscope::model {

namespace {

double processCpuSeconds() {
    timespec spent{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spent) != 0) {
        return 0.0;
    }
    return static_cast<double>(spent.tv_sec) + static_cast<double>(spent.tv_nsec) * 1e-9;
}

std::optional<CpuLoad::Jiffies> readProcStat() {
    std::ifstream file("/proc/stat");
    std::string line;
    if (!file || !std::getline(file, line)) {
        return std::nullopt;
    }
    return CpuLoad::parseProcStat(line);
}

} // namespace

std::optional<CpuLoad::Jiffies> CpuLoad::parseProcStat(const std::string& text) {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is inside user already.
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string name;
        fields >> name;
        if (name != "cpu") {
            continue;
        }
        uint64_t values[8] = {};
        int read = 0;
        while (read < 8 && fields >> values[read]) {
            ++read;
        }
        if (read < 4) {
            return std::nullopt;
        }
        uint64_t total = 0;
        for (int i = 0; i < read; ++i) {
            total += values[i];
        }
        const uint64_t idle = values[3] + (read > 4 ? values[4] : 0);
        return Jiffies{total - idle, total};
    }
    return std::nullopt;
}

int CpuLoad::freeCores(uint64_t busy, uint64_t total, double ownCores, int cores) {
    if (total == 0 || cores <= 0) {
        return std::max(cores, 1);
    }
    const double machineBusy = static_cast<double>(std::min(busy, total)) / static_cast<double>(total) * cores;
    const double others = std::max(0.0, machineBusy - std::max(0.0, ownCores));
    const int free = static_cast<int>(std::lround(static_cast<double>(cores) - others));
    return std::clamp(free, 1, cores);
}

CpuLoad::CpuLoad(int cores, std::chrono::milliseconds interval)
    : m_cores(std::max(cores, 1)), m_interval(interval), m_free(m_cores), m_sampledAt(std::chrono::steady_clock::now()),
      m_ownSeconds(processCpuSeconds()) {
    const std::optional<Jiffies> first = readProcStat();
    m_readable = first.has_value();
    if (first) {
        m_jiffies = *first;
    }
}

int CpuLoad::freeCoresNow() {
    const auto now = std::chrono::steady_clock::now();
    if (!m_readable || now - m_sampledAt < m_interval) {
        return m_free;
    }
    const std::optional<Jiffies> sample = readProcStat();
    const double own = processCpuSeconds();
    if (!sample) {
        m_readable = false;
        m_free = m_cores;
        return m_free;
    }
    const double seconds = std::chrono::duration<double>(now - m_sampledAt).count();
    if (sample->total > m_jiffies.total && seconds > 0.0) {
        m_free = freeCores(sample->busy - std::min(sample->busy, m_jiffies.busy), sample->total - m_jiffies.total,
                           (own - m_ownSeconds) / seconds, m_cores);
    }
    m_jiffies = *sample;
    m_ownSeconds = own;
    m_sampledAt = now;
    return m_free;
}

} // namespace kvscope::model
