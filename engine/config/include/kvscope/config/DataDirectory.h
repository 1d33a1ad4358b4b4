// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string_view>

namespace kvscope::config {

/// Where kvscope's read-only data (presets, workloads, sample sessions) lives: next to an installed
/// binary (`<prefix>/bin/kvscope` reads `<prefix>/share/kvscope/<folder>`), else the source tree the
/// build came from. An environment variable, where the caller has one, overrides both.
class DataDirectory {
public:
    /// The folder `name` ("presets") for this process: the environment variable `environment` when set
    /// and non-empty, else the installed folder when it exists, else `sourceTree`.
    static std::filesystem::path locate(std::string_view name, const char* environment,
                                        const std::filesystem::path& sourceTree);
    /// `<prefix>/share/kvscope/<name>` for an executable at `<prefix>/bin/<program>`; empty when the
    /// executable is not in a `bin` folder.
    static std::filesystem::path installedFolder(const std::filesystem::path& executable,
                                                 std::string_view name);
};

} // namespace kvscope::config
