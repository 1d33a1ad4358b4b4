// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace kvscope::trace {

// A file read with positioned reads (pread), for session files kept on disk while they are viewed.
// Not a memory map on purpose: a file truncated under the viewer (a new recording written over it)
// would make a mapping's next access SIGBUS, while a short read is reported as damage; and pages read
// once do not stay in the process's resident memory. Reads are thread-safe (no shared file position).
class FileBytes {
public:
    // SessionError when the file cannot be opened.
    explicit FileBytes(const std::filesystem::path& path);
    ~FileBytes();
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;

    // The size when opened, or when refreshSize() last looked.
    std::uint64_t size() const { return m_size.load(std::memory_order_relaxed); }
    // Looks at the size again: a file still being written (a live session's) has grown since it was opened.
    void refreshSize() const;
    // Bytes [offset, offset + length) clamped to size(), read into `buffer`; fewer when the file has
    // shrunk since it was opened.
    std::span<const std::uint8_t> read(std::uint64_t offset, std::uint64_t length,
                                       std::vector<std::uint8_t>& buffer) const;

private:
    int m_fd = -1;
    mutable std::atomic<std::uint64_t> m_size{0};
};

} // namespace kvscope::trace
