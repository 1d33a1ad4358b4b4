// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"
#include "kvscope/paged/PagedConfig.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace kvscope::serving {

/// What a serving session's metadata records of its cache (SessionMetadata::cacheSettingsJson), written alike by
/// `kvscope-cli serve` and the inspector's live serving: kind "paged", the workload, the pool's configuration, its
/// layer groups, and its bytes: `block_bytes` (one block in each group) and `pool_bytes` (every pool), from which a
/// replay tells the bytes a step holds without the model.
class ServingSessionSettings {
public:
    static nlohmann::json describe(const paged::PagedConfig& config, const std::filesystem::path& workload,
                                   const model::Architecture& architecture);
};

} // namespace kvscope::serving
