// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A temporary folder for a test (torch-free: the GUI tests use it too).
#include <filesystem>
#include <random>
#include <string>

namespace kvscope::testing {

/// A fresh empty folder under the system temp folder, removed by the destructor.
class TemporaryDirectory {
public:
    explicit TemporaryDirectory(const std::string& stem) {
        std::random_device random;
        m_path = std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(random()));
        std::filesystem::create_directories(m_path);
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

} // namespace kvscope::testing
