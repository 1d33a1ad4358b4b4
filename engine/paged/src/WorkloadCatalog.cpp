// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/WorkloadCatalog.h"

#include "kvscope/paged/PagedError.h"

#include "kvscope/config/DataDirectory.h"

#include <algorithm>
#include <system_error>

#ifndef KVSCOPE_WORKLOADS_DIR
#error "KVSCOPE_WORKLOADS_DIR must point at resources/workloads"
#endif

namespace kvscope::paged {

std::filesystem::path WorkloadCatalog::directory() {
    return config::DataDirectory::locate("workloads", "KVSCOPE_WORKLOADS", KVSCOPE_WORKLOADS_DIR);
}

std::vector<std::string> WorkloadCatalog::names() {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory(), error)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json")
            names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::filesystem::path WorkloadCatalog::resolve(const std::string& nameOrPath) {
    std::error_code error;
    if (std::filesystem::is_regular_file(nameOrPath, error))
        return nameOrPath;
    const auto builtin = directory() / (nameOrPath + ".json");
    if (std::filesystem::is_regular_file(builtin, error))
        return builtin;
    std::string list;
    for (const auto& name : names())
        list += (list.empty() ? "" : ", ") + name;
    throw PagedError("no workload file or built-in workload '" + nameOrPath + "': built-in workloads are " +
                     (list.empty() ? std::string("(none found in ") + directory().string() + ")" : list) +
                     "; or give the path of a workload JSON file");
}

} // namespace kvscope::paged
