// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace kvscope::model {

/// How many of the machine's cores other programs keep busy, from /proc/stat and this process's own CPU time,
/// so that the kernels' threads are sized to the cores left free.
class CpuLoad {
public:
    /// The busy and total jiffies of the "cpu" line of a /proc/stat text (busy = total - idle - iowait), or
    /// nothing when the text has no such line.
    struct Jiffies {
        uint64_t busy = 0;
        uint64_t total = 0;
    };
    static std::optional<Jiffies> parseProcStat(const std::string& text);

    /// The cores free for this process over an interval: `cores` less what others used, where the machine was
    /// busy `busy` of `total` jiffies (all cores together) and this process used `ownCores` cores on average.
    /// Rounded to the nearest core, at least 1.
    static int freeCores(uint64_t busy, uint64_t total, double ownCores, int cores);

    /// `cores` cores, sampled at most once per `interval`.
    explicit CpuLoad(int cores, std::chrono::milliseconds interval = std::chrono::milliseconds(250));
    /// The free cores as of the last interval that ended (all of them before the first ends, or when /proc/stat
    /// cannot be read).
    int freeCoresNow();

private:
    int m_cores;
    std::chrono::milliseconds m_interval;
    int m_free;
    bool m_readable = true;
    std::chrono::steady_clock::time_point m_sampledAt;
    Jiffies m_jiffies;
    double m_ownSeconds = 0.0;
};

} // namespace kvscope::model
