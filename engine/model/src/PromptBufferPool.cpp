// SPDX-License-Identifier: GPL-3.0-or-later
#include "PromptBufferPool.h"

#include "kvscope/config/AddressSanitizer.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <sys/mman.h>
#include <unistd.h>

namespace kvscope::model {
namespace {

std::size_t pageBytes() {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return page;
}

std::size_t pageRounded(std::size_t bytes) { return (bytes + pageBytes() - 1) / pageBytes() * pageBytes(); }

} // namespace

PromptBufferPool::PromptBufferPool() {
#ifdef KVSCOPE_ASAN
    // AddressSanitizer checks what glibc hands out, not the region: there every buffer stays glibc's.
    return;
#endif
    // Address space only, as much as the machine's memory, which no prompt's buffers reach: inaccessible, so that
    // no commit charge is taken for it even where the kernel counts every writable page (overcommit_memory=2); the
    // part buffers reach is opened as they do (`carve`). A buffer that finds no room comes from glibc.
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const std::size_t wanted = pages > 0 ? static_cast<std::size_t>(pages) * pageBytes() : std::size_t{1} << 32;
    void* region = ::mmap(nullptr, wanted, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region != MAP_FAILED) {
        m_region = static_cast<char*>(region);
        m_regionBytes = wanted;
        m_free.emplace(0, FreeRange{wanted, false});
    }
}

PromptBufferPool& PromptBufferPool::shared() {
    static PromptBufferPool* pool = [] {
        auto* created = new PromptBufferPool(); // never destroyed: tensors may outlive static destruction
        // Above LibTorch's own registration (priority 0), so that it is the one at::empty asks from now on.
        c10::SetCPUAllocator(created, 1);
        return created;
    }();
    return *pool;
}

PromptBufferPool::Prompt::Prompt() { shared().enter(); }

PromptBufferPool::Prompt::~Prompt() { shared().leave(); }

void PromptBufferPool::enter() {
    std::lock_guard lock(m_mutex);
    ++m_prompts;
}

void PromptBufferPool::leave() {
    std::lock_guard lock(m_mutex);
    if (--m_prompts > 0) {
        return;
    }
    for (auto& [offset, range] : m_free) {
        if (range.resident) {
            ::madvise(m_region + offset, touchedBytes(offset, range), MADV_DONTNEED);
            range.resident = false;
        }
    }
}

#if TORCH_VERSION_MAJOR >= 2
c10::DataPtr PromptBufferPool::allocate(std::size_t bytes) { return take(bytes); }

void PromptBufferPool::copy_data(void* destination, const void* source, std::size_t count) const {
    default_copy_data(destination, source, count);
}
#else
c10::DataPtr PromptBufferPool::allocate(std::size_t bytes) const {
    return const_cast<PromptBufferPool*>(this)->take(bytes);
}
#endif

c10::DataPtr PromptBufferPool::take(std::size_t bytes) {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (bytes >= kPooledBytes && m_region != nullptr) {
        std::lock_guard lock(m_mutex);
        if (m_prompts > 0) {
            if (void* data = carve(pageRounded(bytes))) {
                return {data, data, &release, cpu};
            }
        }
    }
    void* data = c10::alloc_cpu(bytes);
    return {data, data, &release, cpu};
}

void* PromptBufferPool::carve(std::size_t bytes) {
    // The lowest range that fits (first fit by address): a layer's buffers fall into the holes the layer before
    // it left and the region stays packed toward its start; best fit left more holes between the cache's rows.
    auto fit =
        std::find_if(m_free.begin(), m_free.end(), [&](const auto& range) { return range.second.bytes >= bytes; });
    if (fit == m_free.end()) {
        return nullptr;
    }
    const std::size_t offset = fit->first;
    if (offset + bytes > m_openBytes) {
        // Opened 64 MB at a time: a prompt's first layer opens what the rest reuse.
        constexpr std::size_t kOpenedAtOnce = std::size_t{64} << 20;
        const std::size_t open =
            std::min(m_regionBytes, (offset + bytes + kOpenedAtOnce - 1) / kOpenedAtOnce * kOpenedAtOnce);
        if (::mprotect(m_region + m_openBytes, open - m_openBytes, PROT_READ | PROT_WRITE) != 0) {
            return nullptr; // no memory to commit: glibc's turn
        }
        m_openBytes = open;
    }
    const FreeRange range = fit->second;
    m_free.erase(fit);
    if (range.bytes > bytes) {
        m_free.emplace(offset + bytes, FreeRange{range.bytes - bytes, range.resident});
    }
    m_inUse.emplace(offset, bytes);
    m_usedBytes += bytes;
    m_extentBytes = std::max(m_extentBytes, offset + bytes);
    return m_region + offset;
}

void PromptBufferPool::giveBack(std::size_t offset, std::size_t bytes) {
    m_usedBytes -= bytes;
    // Outside a prompt its pages go back to the system at once.
    const bool resident = m_prompts > 0;
    if (!resident) {
        ::madvise(m_region + offset, bytes, MADV_DONTNEED);
    }
    FreeRange joined{bytes, resident};
    auto next = m_free.lower_bound(offset);
    if (next != m_free.end() && offset + bytes == next->first) {
        joined.bytes += next->second.bytes;
        joined.resident = joined.resident || next->second.resident;
        next = m_free.erase(next);
    }
    if (next != m_free.begin()) {
        auto previous = std::prev(next);
        if (previous->first + previous->second.bytes == offset) {
            previous->second.bytes += joined.bytes;
            previous->second.resident = previous->second.resident || joined.resident;
            return;
        }
    }
    m_free.emplace(offset, joined);
}

void PromptBufferPool::release(void* data) {
    PromptBufferPool& pool = shared();
    char* bytes = static_cast<char*>(data);
    if (pool.m_region == nullptr || bytes < pool.m_region || bytes >= pool.m_region + pool.m_regionBytes) {
        c10::free_cpu(data);
        return;
    }
    std::lock_guard lock(pool.m_mutex);
    const std::size_t offset = static_cast<std::size_t>(bytes - pool.m_region);
    auto found = pool.m_inUse.find(offset);
    if (found == pool.m_inUse.end()) {
        return; // not one of its buffers: nothing it handed out starts there
    }
    const std::size_t size = found->second;
    pool.m_inUse.erase(found);
    pool.giveBack(offset, size);
}

std::size_t PromptBufferPool::touchedBytes(std::size_t offset, const FreeRange& range) const {
    return std::min(range.bytes, m_extentBytes - std::min(offset, m_extentBytes));
}

std::size_t PromptBufferPool::usedBytes() const {
    std::lock_guard lock(m_mutex);
    return m_usedBytes;
}

std::size_t PromptBufferPool::extentBytes() const {
    std::lock_guard lock(m_mutex);
    return m_extentBytes;
}

std::size_t PromptBufferPool::residentFreeBytes() const {
    std::lock_guard lock(m_mutex);
    std::size_t total = 0;
    for (const auto& [offset, range] : m_free) {
        if (range.resident) {
            total += touchedBytes(offset, range);
        }
    }
    return total;
}

} // namespace kvscope::model
