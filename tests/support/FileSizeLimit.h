// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Test helper: a full disk, for as long as it lives. The file size limit (RLIMIT_FSIZE) makes writes past
// `bytes` fail with EFBIG (SIGXFSZ ignored meanwhile); the old limit and handler come back after.
#include <csignal>
#include <sys/resource.h>

namespace kvscope::testing {

class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &m_saved);
        m_savedHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limited = m_saved;
        limited.rlim_cur = bytes;
        setrlimit(RLIMIT_FSIZE, &limited);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &m_saved);
        std::signal(SIGXFSZ, m_savedHandler);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit m_saved{};
    void (*m_savedHandler)(int) = nullptr;
};

} // namespace kvscope::testing
