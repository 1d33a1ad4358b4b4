// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "CpuLoad.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvscope::model {

/// The threads a decode step's kernels (the packed products, decode attention) run on: they spin a short while
/// between products, so that the next product of the step finds them awake, then sleep; each product takes only
/// the cores other programs leave free. LibTorch's OpenMP threads, which sleep between products (a wake-up each)
/// or spin without end, serve the rest.
class KernelThreads {
public:
    using Task = std::function<void(int64_t begin, int64_t end)>;
    /// What the other threads do once a product is done: spin for the next (a decode step's products follow one
    /// another) or sleep at once (LibTorch's or OpenBLAS's threads run next, on the same cores).
    enum class After { Spin, Sleep };

    /// The process's threads.
    static KernelThreads& shared();

    KernelThreads();
    ~KernelThreads();
    KernelThreads(const KernelThreads&) = delete;
    KernelThreads& operator=(const KernelThreads&) = delete;

    /// Calls task(begin, end) on ranges that cover [0, count) once, of `grain` items (the last maybe fewer),
    /// on the calling thread and up to `threads` - 1 others; `threads` <= 0 means LibTorch's intra-op count.
    /// Fewer when other programs keep cores busy (CpuLoad). A call from inside a task, or while another thread's
    /// call runs, runs its ranges on the calling thread alone. The first exception a task throws is rethrown.
    void parallelFor(int64_t count, int64_t grain, const Task& task, int threads = 0, After after = After::Spin);

    /// Threads the last parallelFor ran on (the caller included).
    int lastThreads() const { return m_lastThreads.load(std::memory_order_relaxed); }

    /// How many threads a product runs on as the machine is now: `wanted`, less the cores other programs use.
    int threadsFor(int wanted);

    /// Sizes the threads to the free cores (the default) or always to the count asked for.
    void setFollowLoad(bool follow) { m_followLoad.store(follow, std::memory_order_relaxed); }

    /// How long the threads spin for the next product before they sleep (1 ms by default).
    void setSpin(std::chrono::microseconds spin) { m_spin.store(spin.count(), std::memory_order_relaxed); }
    /// Threads asleep now (waiting for a product without spinning).
    int sleepingThreads() const { return m_sleepers.load(std::memory_order_seq_cst); }

private:
    void work(int index);
    /// Claims and runs chunks of product `generation` until none is left or the next product has begun.
    void runChunks(uint64_t generation);
    void growTo(int workers);

    // generation (24 bits) | participants (8) | chunks (16) | next chunk (16): see KernelThreads.cpp.
    std::atomic<uint64_t> m_claim{0};
    /// The generation after which the threads sleep at once (After::Sleep).
    std::atomic<uint64_t> m_sleepAfter{~uint64_t{0}};
    std::atomic<int64_t> m_done{0};
    const Task* m_task = nullptr;
    int64_t m_count = 0;
    int64_t m_grain = 1;
    std::exception_ptr m_error;
    std::mutex m_errorMutex;

    std::vector<std::thread> m_workers;
    std::mutex m_sleepMutex;
    std::condition_variable m_wake;
    std::atomic<int> m_sleepers{0};
    std::atomic<bool> m_stop{false};

    std::mutex m_callMutex;
    CpuLoad m_load;
    std::atomic<bool> m_followLoad{true};
    std::atomic<int64_t> m_spin;
    std::atomic<int> m_lastThreads{1};
};

} // namespace kvscope::model
