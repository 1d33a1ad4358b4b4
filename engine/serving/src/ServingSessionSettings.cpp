// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/ServingSessionSettings.h"

#include "kvscope/serving/KvPools.h"
#include "kvscope/serving/LayerGroups.h"

namespace kvscope::serving {

nlohmann::json ServingSessionSettings::describe(const paged::PagedConfig& config, const std::filesystem::path& workload,
                                                const model::Architecture& architecture) {
    const LayerGroups groups(architecture);
    const std::vector<int64_t> blockBytes = KvPools::blockBytes(architecture, groups, config.blockSize);
    int64_t poolBytes = 0;
    nlohmann::json described = nlohmann::json::array();
    for (size_t index = 0; index < groups.groups().size(); ++index) {
        const LayerGroups::Group& group = groups.groups()[index];
        described.push_back({{"group", index},
                             {"kind", group.kind == LayerGroups::Kind::Full      ? "full"
                                      : group.kind == LayerGroups::Kind::Sliding ? "sliding"
                                                                                 : "chunked"},
                             {"window", group.window},
                             {"layers", group.layers}});
        poolBytes += blockBytes[index] * config.numBlocks;
    }
    return {{"kind", "paged"},
            {"workload", workload.string()},
            {"block_size", config.blockSize},
            {"num_blocks", config.numBlocks},
            {"max_num_batched_tokens", config.maxNumBatchedTokens},
            {"max_num_seqs", config.maxNumSeqs},
            {"prefix_caching", config.prefixCaching},
            {"free_policy", std::string(paged::toString(config.freePolicy))},
            {"groups", described},
            {"block_bytes", blockBytes},
            {"pool_bytes", poolBytes}};
}

} // namespace kvscope::serving
