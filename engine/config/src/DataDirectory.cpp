// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/DataDirectory.h"

#include <cstdlib>
#include <system_error>

namespace kvscope::config {

std::filesystem::path DataDirectory::installedFolder(const std::filesystem::path& executable,
                                                     std::string_view name) {
    const std::filesystem::path bin = executable.parent_path();
    if (bin.filename() != "bin")
        return {};
    return bin.parent_path() / "share" / "kvscope" / std::filesystem::path(name);
}

std::filesystem::path DataDirectory::locate(std::string_view name, const char* environment,
                                            const std::filesystem::path& sourceTree) {
    if (environment != nullptr) {
        if (const char* value = std::getenv(environment); value != nullptr && *value)
            return value;
    }
    std::error_code error;
    // /proc/self/exe rather than argv[0]: it holds whatever the program was started as (a link, a
    // relative name), and the engine's libraries have no argv.
    const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) {
        const std::filesystem::path installed = installedFolder(executable, name);
        if (!installed.empty() && std::filesystem::is_directory(installed, error))
            return installed;
    }
    return sourceTree;
}

} // namespace kvscope::config
