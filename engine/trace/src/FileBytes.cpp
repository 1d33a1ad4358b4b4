// SPDX-License-Identifier: GPL-3.0-or-later
#include "FileBytes.h"

#include "kvscope/trace/SessionError.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kvscope::trace {

FileBytes::FileBytes(const std::filesystem::path& path) {
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat status {};
    if (m_fd < 0 || ::fstat(m_fd, &status) != 0 || !S_ISREG(status.st_mode)) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        throw SessionError("cannot open session file " + path.string());
    }
    m_size = static_cast<std::uint64_t>(status.st_size);
}

void FileBytes::refreshSize() const {
    struct stat status {};
    if (::fstat(m_fd, &status) == 0) {
        m_size.store(static_cast<std::uint64_t>(status.st_size), std::memory_order_relaxed);
    }
}

FileBytes::~FileBytes() {
    ::close(m_fd);
}

std::span<const std::uint8_t> FileBytes::read(std::uint64_t offset, std::uint64_t length,
                                              std::vector<std::uint8_t>& buffer) const {
    const std::uint64_t size = this->size();
    if (offset >= size) {
        return {};
    }
    length = std::min(length, size - offset);
    buffer.resize(static_cast<std::size_t>(length));
    std::size_t done = 0;
    while (done < buffer.size()) {
        const ssize_t got =
            ::pread(m_fd, buffer.data() + done, buffer.size() - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break; // the file shrank, or a read error: the caller sees the short span as damage
        }
        done += static_cast<std::size_t>(got);
    }
    return std::span<const std::uint8_t>(buffer.data(), done);
}

} // namespace kvscope::trace
