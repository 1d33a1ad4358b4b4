// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/InvariantChecker.h"

#include "kvscope/paged/BlockHasher.h"
#include "kvscope/paged/Scheduler.h"

#include <algorithm>
#include <map>

namespace kvscope::paged {

namespace {

std::string blockName(BlockId id) {
    return "block " + std::to_string(id);
}

} // namespace

std::vector<std::string> InvariantChecker::check(const Scheduler& scheduler) {
    std::vector<std::string> problems;
    const KVCacheManager& manager = scheduler.cacheManager();
    const BlockPool& pool = manager.pool();
    const std::int64_t blockSize = manager.config().blockSize;
    const auto& blocks = pool.blocks();

    // The free queue: links agree both ways, every member is marked free, the size is right.
    {
        std::int32_t count = 0;
        BlockId previous = kNoBlock;
        for (BlockId id = pool.freeQueue().front(); id != kNoBlock;
             id = blocks[static_cast<std::size_t>(id)].nextFree) {
            const KVCacheBlock& block = blocks[static_cast<std::size_t>(id)];
            if (block.prevFree != previous)
                problems.push_back(blockName(id) + " links back to " + std::to_string(block.prevFree) +
                                   ", not " + std::to_string(previous));
            if (!block.inFreeQueue)
                problems.push_back(blockName(id) + " is linked in the free queue but not marked free");
            previous = id;
            if (++count > pool.numBlocks()) {
                problems.push_back("the free queue loops");
                break;
            }
        }
        if (previous != pool.freeQueue().back())
            problems.push_back("the free queue's tail is " + std::to_string(pool.freeQueue().back()) +
                               " but its last linked block is " + std::to_string(previous));
        if (count != pool.numFreeBlocks())
            problems.push_back("the free queue links " + std::to_string(count) + " blocks but counts " +
                               std::to_string(pool.numFreeBlocks()));
    }

    // Table entries per block, and where each block sits in the tables.
    std::vector<std::int32_t> holders(blocks.size(), 0);
    std::vector<std::int64_t> indexOf(blocks.size(), -1);
    const auto running = scheduler.running();
    for (std::int32_t g = 0; g < manager.numGroups(); ++g) {
        const LayerGroupManager& group = manager.group(g);
        for (const auto& [requestId, table] : group.tables()) {
            const Request& request = scheduler.request(requestId);
            if (request.state != RequestState::Running) {
                if (!table.empty())
                    problems.push_back("request '" + requestId +
                                       "' is not running but holds a table in group " + std::to_string(g));
                continue;
            }
            const std::int64_t expected = (request.numComputedTokens + blockSize - 1) / blockSize;
            if (static_cast<std::int64_t>(table.size()) != expected)
                problems.push_back("request '" + requestId + "' has " + std::to_string(table.size()) +
                                   " blocks in group " + std::to_string(g) + " for " +
                                   std::to_string(request.numComputedTokens) + " computed tokens (expected " +
                                   std::to_string(expected) + ")");
            const auto hashes = BlockHasher(manager.config().hashAlgorithm).chain(request, blockSize, static_cast<std::int64_t>(table.size()));
            for (std::size_t i = 0; i < table.size(); ++i) {
                const BlockId id = table[i];
                if (id == pool.nullBlock()) {
                    const bool sliding = group.spec().kind == GroupKind::Sliding;
                    const std::int64_t windowStart = request.numComputedTokens - group.spec().window + 1;
                    if (!sliding || static_cast<std::int64_t>(i + 1) * blockSize > windowStart)
                        problems.push_back("request '" + requestId + "' has a hole at " + std::to_string(i) +
                                           " in group " + std::to_string(g) +
                                           (sliding ? " inside its window" : " (full attention has none)"));
                    continue;
                }
                if (id < 0 || id >= pool.numBlocks() || blocks[static_cast<std::size_t>(id)].isNull) {
                    problems.push_back("request '" + requestId + "' holds invalid block " +
                                       std::to_string(id));
                    continue;
                }
                ++holders[static_cast<std::size_t>(id)];
                auto& at = indexOf[static_cast<std::size_t>(id)];
                if (at >= 0 && at != static_cast<std::int64_t>(i))
                    problems.push_back(blockName(id) + " sits at table index " + std::to_string(at) +
                                       " and " + std::to_string(i));
                at = static_cast<std::int64_t>(i);
                const KVCacheBlock& block = blocks[static_cast<std::size_t>(id)];
                if (block.group != g)
                    problems.push_back(blockName(id) + " is in a table of group " + std::to_string(g) +
                                       " but belongs to group " + std::to_string(block.group));
                if (block.hash) {
                    if (static_cast<std::int64_t>(i + 1) * blockSize > request.numComputedTokens)
                        problems.push_back(blockName(id) + " is cached but request '" + requestId +
                                           "' has not computed all its tokens");
                    else if (i >= hashes.size() || hashes[i] != *block.hash)
                        problems.push_back(blockName(id) +
                                           " holds a hash that is not the chain hash of request '" +
                                           requestId + "' tokens [" + std::to_string(i * blockSize) + ", " +
                                           std::to_string((i + 1) * blockSize) + ")");
                }
            }
        }
    }

    std::int32_t used = 0;
    std::vector<std::size_t> cachedPerGroup(static_cast<std::size_t>(manager.numGroups()), 0);
    for (const KVCacheBlock& block : blocks) {
        if (block.isNull) {
            if (block.inFreeQueue || block.hash)
                problems.push_back("the null block is in the free queue or cached");
            continue;
        }
        const std::int32_t held = holders[static_cast<std::size_t>(block.id)];
        if (block.refCnt != held)
            problems.push_back(blockName(block.id) + " counts " + std::to_string(block.refCnt) +
                               " references but " + std::to_string(held) + " tables hold it");
        if (block.inFreeQueue == (held > 0))
            problems.push_back(blockName(block.id) + (held > 0 ? " is held and in the free queue"
                                                               : " is neither held nor in the free queue"));
        if (held > 1 && !block.hash)
            problems.push_back(blockName(block.id) + " is shared by " + std::to_string(held) +
                               " tables without being cached (only prefix hits share blocks)");
        if (held > 0)
            ++used;
        if (block.hash) {
            if (block.group < 0 || block.group >= manager.numGroups()) {
                problems.push_back(blockName(block.id) + " is cached in no group");
                continue;
            }
            ++cachedPerGroup[static_cast<std::size_t>(block.group)];
            const auto holdersOfHash = pool.cachedBlocks(*block.hash, block.group);
            if (std::find(holdersOfHash.begin(), holdersOfHash.end(), block.id) == holdersOfHash.end())
                problems.push_back(blockName(block.id) + " is cached but missing from its group's hash map");
        }
    }
    for (std::int32_t g = 0; g < manager.numGroups(); ++g) {
        if (pool.numCachedEntries(g) != cachedPerGroup[static_cast<std::size_t>(g)])
            problems.push_back("group " + std::to_string(g) + "'s hash map has " +
                               std::to_string(pool.numCachedEntries(g)) + " entries for " +
                               std::to_string(cachedPerGroup[static_cast<std::size_t>(g)]) +
                               " cached blocks");
    }
    if (used != pool.numUsedBlocks())
        problems.push_back(std::to_string(used) + " blocks are held but the pool counts " +
                           std::to_string(pool.numUsedBlocks()));
    if (static_cast<std::int32_t>(running.size()) > manager.config().maxNumSeqs)
        problems.push_back(std::to_string(running.size()) + " requests run, more than max_num_seqs " +
                           std::to_string(manager.config().maxNumSeqs));
    return problems;
}

} // namespace kvscope::paged
