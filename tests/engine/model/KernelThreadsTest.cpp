// SPDX-License-Identifier: GPL-3.0-or-later
// The decode kernels' threads: every index of a product covered exactly once whatever the count, grain and
// threads, products back to back and after the workers slept, the threads asleep at once after a product that asks
// for it, calls from inside a task and from a second
// thread run whole on their caller, a task's exception reaches the caller; and CpuLoad's free cores against
// literal /proc/stat lines and loads.
#include "CpuLoad.h"
#include "KernelThreads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using kvscope::model::CpuLoad;
using kvscope::model::KernelThreads;

namespace {

/// How many times parallelFor handed each index of [0, count) to a task.
std::vector<int> coverCounts(KernelThreads& threads, int64_t count, int64_t grain, int wanted) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
    threads.parallelFor(
        count, grain,
        [&](int64_t begin, int64_t end) {
            // One thread takes the whole range; more take chunks of the grain, grown to fit 65535 chunks.
            const int64_t chunk = wanted <= 1 ? count : std::max<int64_t>(grain, (count + 0xfffe) / 0xffff);
            EXPECT_LE(end - begin, chunk);
            for (int64_t i = begin; i < end; ++i) {
                seen[static_cast<size_t>(i)].fetch_add(1);
            }
        },
        wanted);
    std::vector<int> counts;
    for (auto& s : seen) {
        counts.push_back(s.load());
    }
    return counts;
}

} // namespace

TEST(KernelThreadsTest, EveryIndexOnceForAnyCountGrainAndThreads) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    for (int wanted : {1, 2, 3, 8}) {
        for (int64_t count : {1, 2, 15, 16, 17, 1000, 49152}) {
            for (int64_t grain : {1, 16, 1000}) {
                const std::vector<int> counts = coverCounts(threads, count, grain, wanted);
                for (size_t i = 0; i < counts.size(); ++i) {
                    ASSERT_EQ(counts[i], 1) << "index " << i << " of " << count << ", grain " << grain << ", "
                                            << wanted << " threads";
                }
            }
        }
    }
    // More chunks than the claim word holds: the grain grows, the cover stays exact.
    const std::vector<int> counts = coverCounts(threads, 200000, 1, 4);
    EXPECT_EQ(std::count(counts.begin(), counts.end(), 1), 200000);
}

TEST(KernelThreadsTest, ProductsAfterTheWorkersSleptAndBackToBack) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    std::atomic<int64_t> sum{0};
    for (int round = 0; round < 3; ++round) {
        for (int product = 0; product < 200; ++product) {
            threads.parallelFor(64, 1, [&](int64_t begin, int64_t end) { sum += end - begin; }, 4);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: the workers sleep
    }
    EXPECT_EQ(sum.load(), 3 * 200 * 64);
    EXPECT_EQ(threads.lastThreads(), 4);
}

TEST(KernelThreadsTest, AfterSleepTheThreadsSleepAtOnceWhereSpinKeepsThemAwake) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    threads.setSpin(std::chrono::seconds(30));
    std::atomic<int64_t> sum{0};
    const auto add = [&](int64_t begin, int64_t end) { sum += end - begin; };
    threads.parallelFor(64, 1, add, 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(threads.sleepingThreads(), 0);  // spinning for the next product
    threads.parallelFor(64, 1, add, 3, KernelThreads::After::Sleep);
    const auto start = std::chrono::steady_clock::now();
    while (threads.sleepingThreads() < 2 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(threads.sleepingThreads(), 2);  // both asleep long before the spin's 30 s
    threads.parallelFor(64, 1, add, 3);       // and woken by the next product
    EXPECT_EQ(sum.load(), 3 * 64);
}

TEST(KernelThreadsTest, OtherThreadsTakePartWhenAsked) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    std::mutex mutex;
    std::set<std::thread::id> ids;
    for (int product = 0; product < 50 && ids.size() < 2; ++product) {
        threads.parallelFor(
            64, 1,
            [&](int64_t, int64_t) {
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                std::lock_guard<std::mutex> lock(mutex);
                ids.insert(std::this_thread::get_id());
            },
            2);
    }
    EXPECT_EQ(ids.size(), 2u);
}

TEST(KernelThreadsTest, NestedAndConcurrentCallsRunOnTheirCaller) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    std::atomic<int64_t> inner{0};
    threads.parallelFor(
        8, 1,
        [&](int64_t, int64_t) {
            const auto caller = std::this_thread::get_id();
            threads.parallelFor(
                10, 1,
                [&](int64_t begin, int64_t end) {
                    EXPECT_EQ(std::this_thread::get_id(), caller);
                    inner += end - begin;
                },
                4);
        },
        4);
    EXPECT_EQ(inner.load(), 80);

    std::atomic<int64_t> total{0};
    std::thread other([&] {
        for (int i = 0; i < 200; ++i) {
            threads.parallelFor(100, 3, [&](int64_t begin, int64_t end) { total += end - begin; }, 2);
        }
    });
    for (int i = 0; i < 200; ++i) {
        threads.parallelFor(100, 3, [&](int64_t begin, int64_t end) { total += end - begin; }, 2);
    }
    other.join();
    EXPECT_EQ(total.load(), 400 * 100);
}

TEST(KernelThreadsTest, ATasksExceptionReachesTheCaller) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    EXPECT_THROW(threads.parallelFor(
                     100, 1,
                     [](int64_t begin, int64_t) {
                         if (begin == 57) {
                             throw std::runtime_error("chunk 57");
                         }
                     },
                     3),
                 std::runtime_error);
    std::atomic<int64_t> after{0};
    threads.parallelFor(100, 1, [&](int64_t begin, int64_t end) { after += end - begin; }, 3);
    EXPECT_EQ(after.load(), 100);
}

TEST(KernelThreadsTest, ProcStatCpuLine) {
    const auto read = CpuLoad::parseProcStat(
        "cpu  4705 356 584 3699176 23060 0 277 0 0 0\ncpu0 2352 178 292 1849588 11530 0 138 0 0 0\n");
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->total, 4705u + 356 + 584 + 3699176 + 23060 + 277);
    EXPECT_EQ(read->busy, 4705u + 356 + 584 + 277);
    // An old kernel's four fields: no iowait.
    const auto old = CpuLoad::parseProcStat("cpu 10 0 5 85\n");
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ(old->busy, 15u);
    EXPECT_EQ(old->total, 100u);
    EXPECT_FALSE(CpuLoad::parseProcStat("intr 1 2 3\n").has_value());
    EXPECT_FALSE(CpuLoad::parseProcStat("cpu 1 2\n").has_value());
    EXPECT_FALSE(CpuLoad::parseProcStat("").has_value());
}

TEST(KernelThreadsTest, FreeCoresFromTheMachinesLoadLessOurOwn) {
    struct Row {
        uint64_t busy;
        uint64_t total;
        double own;
        int cores;
        int free;
    };
    const Row rows[] = {
        {0, 200, 0.0, 2, 2},      // quiet
        {200, 200, 2.0, 2, 2},    // busy, all of it ours
        {200, 200, 0.0, 2, 1},    // both cores others': still one thread
        {100, 200, 0.0, 2, 1},    // one core others'
        {150, 200, 1.0, 2, 2},    // half a core others': rounds to 2 free
        {160, 200, 0.0, 2, 1},    // 1.6 cores others'
        {400, 800, 1.0, 8, 5},    // 4 busy, 1 ours: 3 others'
        {0, 0, 0.0, 4, 4},        // no interval yet
        {300, 200, 0.0, 2, 1},    // a busy count past the total (counters moved apart): clamped
    };
    for (const Row& row : rows) {
        EXPECT_EQ(CpuLoad::freeCores(row.busy, row.total, row.own, row.cores), row.free)
            << row.busy << "/" << row.total << " own " << row.own << " of " << row.cores;
    }
}

TEST(KernelThreadsTest, ThreadsFollowTheLoadOnlyWhenAsked) {
    KernelThreads threads;
    threads.setFollowLoad(false);
    EXPECT_EQ(threads.threadsFor(6), 6);
    EXPECT_EQ(threads.threadsFor(0), 1);
    threads.setFollowLoad(true);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    EXPECT_GE(threads.threadsFor(64), 1);
    EXPECT_LE(threads.threadsFor(64), cores);
}
