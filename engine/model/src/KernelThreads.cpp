// SPDX-License-Identifier: GPL-3.0-or-later
#include "KernelThreads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvscope::model {

namespace {

// The claim word: generation (24 bits) | participants (8) | chunks (16) | next chunk (16). Claiming a chunk is one
// compare-and-swap of the whole word, so a thread late to a product never takes a chunk of the next one.
constexpr int kGenerationShift = 40;
constexpr int kParticipantsShift = 32;
constexpr int kChunksShift = 16;
constexpr uint64_t kField16 = 0xffff;
constexpr int64_t kMaxChunks = 0xffff;
constexpr int kMaxThreads = 255;

/// How long a thread spins for the next product before it sleeps: longer than the gaps between a decode step's
/// products (its small LibTorch ops), short enough that a paused inspector leaves the cores within a millisecond.
constexpr auto kSpin = std::chrono::microseconds(1000);

thread_local bool t_insideTask = false;

uint64_t generationOf(uint64_t claim) { return claim >> kGenerationShift; }
int participantsOf(uint64_t claim) { return static_cast<int>((claim >> kParticipantsShift) & 0xff); }
int64_t chunksOf(uint64_t claim) { return static_cast<int64_t>((claim >> kChunksShift) & kField16); }
int64_t nextOf(uint64_t claim) { return static_cast<int64_t>(claim & kField16); }

inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

} // namespace

KernelThreads& KernelThreads::shared() {
    static KernelThreads threads;
    return threads;
}

KernelThreads::KernelThreads()
    : m_load(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))), m_spin(kSpin.count()) {}

KernelThreads::~KernelThreads() {
    {
        std::lock_guard<std::mutex> lock(m_sleepMutex);
        m_stop.store(true, std::memory_order_seq_cst);
    }
    m_wake.notify_all();
    for (std::thread& worker : m_workers) {
        worker.join();
    }
}

int KernelThreads::threadsFor(int wanted) {
    wanted = std::clamp(wanted, 1, kMaxThreads);
    if (!m_followLoad.load(std::memory_order_relaxed) || wanted == 1) {
        return wanted;
    }
    return std::min(wanted, m_load.freeCoresNow());
}

void KernelThreads::growTo(int workers) {
    while (static_cast<int>(m_workers.size()) < workers) {
        const int index = static_cast<int>(m_workers.size());
        m_workers.emplace_back([this, index] { work(index); });
    }
}

void KernelThreads::parallelFor(int64_t count, int64_t grain, const Task& task, int threads, After after) {
    if (count <= 0) {
        return;
    }
    grain = std::max<int64_t>(grain, 1);
    std::unique_lock<std::mutex> call(m_callMutex, std::try_to_lock);
    const int wanted = threads > 0 ? threads : at::get_num_threads();
    if (t_insideTask || !call.owns_lock() || wanted <= 1 || count <= grain) {
        task(0, count);
        return;
    }
    const int participants = threadsFor(wanted);
    m_lastThreads.store(participants, std::memory_order_relaxed);
    if (participants <= 1) {
        task(0, count);
        return;
    }
    growTo(participants - 1);
    grain = std::max(grain, (count + kMaxChunks - 1) / kMaxChunks);
    const int64_t chunks = (count + grain - 1) / grain;
    m_task = &task;
    m_count = count;
    m_grain = grain;
    m_error = nullptr;
    m_done.store(0, std::memory_order_relaxed);
    const uint64_t generation = (generationOf(m_claim.load(std::memory_order_relaxed)) + 1) & 0xffffff;
    m_sleepAfter.store(after == After::Sleep ? generation : ~uint64_t{0}, std::memory_order_relaxed);
    m_claim.store((generation << kGenerationShift) | (static_cast<uint64_t>(participants) << kParticipantsShift) |
                      (static_cast<uint64_t>(chunks) << kChunksShift),
                  std::memory_order_seq_cst);
    if (m_sleepers.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard<std::mutex> lock(m_sleepMutex);
        m_wake.notify_all();
    }
    runChunks(generation);
    // Every chunk claimed is finished before the next product may reuse the fields above.
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0; m_done.load(std::memory_order_acquire) < chunks; ++spins) {
        if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin) {
            std::this_thread::yield();  // a worker lost its core: give it back
        } else {
            spinPause();
        }
    }
    m_task = nullptr;
    if (m_error) {
        std::rethrow_exception(m_error);
    }
}

void KernelThreads::runChunks(uint64_t generation) {
    uint64_t claim = m_claim.load(std::memory_order_acquire);
    while (generationOf(claim) == generation && nextOf(claim) < chunksOf(claim)) {
        if (!m_claim.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
            continue;
        }
        const int64_t begin = nextOf(claim) * m_grain;
        const int64_t end = std::min(m_count, begin + m_grain);
        t_insideTask = true;
        try {
            (*m_task)(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m_errorMutex);
            if (!m_error) {
                m_error = std::current_exception();
            }
        }
        t_insideTask = false;
        m_done.fetch_add(1, std::memory_order_acq_rel);
        claim = m_claim.load(std::memory_order_acquire);
    }
}

void KernelThreads::work(int index) {
    uint64_t seen = generationOf(m_claim.load(std::memory_order_acquire));
    while (true) {
        // Spin for the next product (unless the last asked for sleep), then sleep until one comes.
        const auto start = std::chrono::steady_clock::now();
        const std::chrono::microseconds spin(m_spin.load(std::memory_order_relaxed));
        const bool sleepNow = m_sleepAfter.load(std::memory_order_relaxed) == seen;
        uint64_t claim = m_claim.load(std::memory_order_acquire);
        for (int spins = 0; generationOf(claim) == seen && !m_stop.load(std::memory_order_relaxed); ++spins) {
            if (sleepNow || ((spins & 255) == 255 && std::chrono::steady_clock::now() - start > spin)) {
                std::unique_lock<std::mutex> lock(m_sleepMutex);
                m_sleepers.fetch_add(1, std::memory_order_seq_cst);
                m_wake.wait(lock, [&] {
                    return m_stop.load(std::memory_order_seq_cst) ||
                           generationOf(m_claim.load(std::memory_order_seq_cst)) != seen;
                });
                m_sleepers.fetch_sub(1, std::memory_order_seq_cst);
            } else {
                spinPause();
            }
            claim = m_claim.load(std::memory_order_acquire);
        }
        if (m_stop.load(std::memory_order_relaxed)) {
            return;
        }
        seen = generationOf(claim);
        // Worker `index` is participant index + 1 (the caller is the first).
        if (index + 1 < participantsOf(claim)) {
            runChunks(seen);
        }
    }
}

} // namespace kvscope::model
