// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <c10/core/Allocator.h>
#include <torch/version.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

namespace kvscope::model {

/// LibTorch's CPU allocator, which serves a prompt's large buffers (a layer's widened weights, activations,
/// products, the cache's rows) from one region of its own, the first of its free ranges that fits, neighbours
/// joined when freed; when the last prompt ends, the free ranges' pages return to the system. glibc's heap, which
/// served them before, kept what a prompt freed resident and its holes apart (small allocations between them), so
/// that the process's peak grew by up to twice the prompt's working set; mapping each buffer afresh instead costs
/// a page fault per page of every buffer.
class PromptBufferPool final : public c10::Allocator {
public:
    /// Buffers this large or larger come from the region while a prompt runs; smaller ones, every buffer outside
    /// a prompt and any the region has no room for, from LibTorch's own allocation (glibc).
    static constexpr std::size_t kPooledBytes = 256 * 1024;

    /// The process's pool, LibTorch's CPU allocator from the first Prompt on.
    static PromptBufferPool& shared();

    /// While one lives (on any thread), large buffers come from the region; when the last one ends, the pages of
    /// its free ranges return to the system.
    class Prompt {
    public:
        Prompt();
        ~Prompt();
        Prompt(const Prompt&) = delete;
        Prompt& operator=(const Prompt&) = delete;
    };

#if TORCH_VERSION_MAJOR >= 2 // allocate() lost its const and copy_data() came in 2.x
    c10::DataPtr allocate(std::size_t bytes) override;
    void copy_data(void* destination, const void* source, std::size_t count) const override;
#else
    c10::DataPtr allocate(std::size_t bytes) const override;
#endif
    c10::DeleterFnPtr raw_deleter() const override { return &release; }

    /// False where the region could not be reserved, or in a build with AddressSanitizer: every buffer is glibc's.
    bool hasRegion() const { return m_region != nullptr; }
    /// Bytes of the region's buffers in use.
    std::size_t usedBytes() const;
    /// The region's extent: the end of the highest buffer it has handed out (what a prompt touched at most).
    std::size_t extentBytes() const;
    /// Bytes of the region's free ranges whose pages are resident (returned when the last prompt ends).
    std::size_t residentFreeBytes() const;

private:
    PromptBufferPool();
    c10::DataPtr take(std::size_t bytes);
    void* carve(std::size_t bytes);
    void giveBack(std::size_t offset, std::size_t bytes);
    static void release(void* data);
    void enter();
    void leave();

    mutable std::mutex m_mutex;
    char* m_region = nullptr;
    std::size_t m_regionBytes = 0;
    int m_prompts = 0;
    /// Buffers in use: offset -> bytes.
    std::unordered_map<std::size_t, std::size_t> m_inUse;
    /// Free ranges by offset, neighbours joined; each one's pages resident or not.
    struct FreeRange {
        std::size_t bytes;
        bool resident;
    };
    std::map<std::size_t, FreeRange> m_free;
    /// The part of a free range below the extent: pages past it were never written.
    std::size_t touchedBytes(std::size_t offset, const FreeRange& range) const;
    std::size_t m_usedBytes = 0;
    std::size_t m_extentBytes = 0;
    /// The region's start that is readable and writable; the rest is address space only.
    std::size_t m_openBytes = 0;
};

} // namespace kvscope::model
