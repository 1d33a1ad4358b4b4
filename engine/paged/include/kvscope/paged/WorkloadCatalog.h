// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::paged {

/// The built-in workloads: every <name>.json of resources/workloads ($KVSCOPE_WORKLOADS overrides the
/// folder). Adding a workload is adding its file.
class WorkloadCatalog {
public:
    static std::filesystem::path directory();
    /// Names (file stems), sorted.
    static std::vector<std::string> names();
    /// The file of a built-in workload, or `nameOrPath` itself when it names an existing file. PagedError
    /// listing the built-in names otherwise.
    static std::filesystem::path resolve(const std::string& nameOrPath);
};

} // namespace kvscope::paged
