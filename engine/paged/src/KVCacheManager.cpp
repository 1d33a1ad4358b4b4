// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/KVCacheManager.h"

#include "kvscope/paged/BlockHasher.h"
#include "kvscope/paged/Request.h"

#include <algorithm>

namespace kvscope::paged {

KVCacheManager::KVCacheManager(const PagedConfig& config, PagedRecorder* recorder)
    : m_config(config), m_pool(config.numBlocks, config.prefixCaching, config.freePolicy,
                               static_cast<std::int32_t>(config.groups.size()), recorder) {
    m_groups.reserve(config.groups.size());
    for (std::size_t i = 0; i < config.groups.size(); ++i)
        m_groups.emplace_back(static_cast<std::int32_t>(i), config.groups[i], config.blockSize, m_pool,
                              config.hashAlgorithm);
}

void KVCacheManager::updateBlockHashes(Request& request) const {
    BlockHasher(m_config.hashAlgorithm).extend(request, m_config.blockSize);
}

ComputedBlocks KVCacheManager::computedBlocks(Request& request) {
    ComputedBlocks hit;
    hit.perGroup.resize(m_groups.size());
    if (!m_config.prefixCaching || request.numTokens() <= 1)
        return hit;
    updateBlockHashes(request);
    // At most numTokens - 1: the last token is recomputed so that its logits give the next token.
    std::int64_t length = request.numTokens() - 1;
    // Every group must hold the prefix; shrinking the length for one group can shrink another's (a sliding
    // group needs the window before the end), so repeat until a whole pass agrees.
    // Visit the groups round-robin until all of them in a row found the whole length.
    std::size_t agreed = 0;
    for (std::size_t g = 0; agreed < m_groups.size(); g = (g + 1) % m_groups.size()) {
        hit.perGroup[g] = m_groups[g].findLongestCacheHit(request.blockHashes, length);
        const auto found = static_cast<std::int64_t>(hit.perGroup[g].size()) * m_config.blockSize;
        if (found < length) {
            length = found;
            agreed = 1;
        } else {
            ++agreed;
        }
    }
    for (auto& blocks : hit.perGroup)
        blocks.resize(static_cast<std::size_t>(length / m_config.blockSize));
    hit.numTokens = length;
    return hit;
}

bool KVCacheManager::allocateSlots(Request& request, std::int64_t numNewTokens, const ComputedBlocks& hit) {
    const std::int64_t numComputed = request.numComputedTokens + hit.numTokens;
    const std::int64_t numTokensNeedSlot = numComputed + numNewTokens;
    static const std::vector<BlockId> noHit;
    const auto hitOf = [&](std::size_t g) -> const std::vector<BlockId>& {
        return g < hit.perGroup.size() ? hit.perGroup[g] : noHit;
    };
    // Blocks out of a sliding window are freed first, so that they count as free below (as vLLM does, they
    // stay freed even when the allocation then fails).
    for (auto& group : m_groups)
        group.removeSkippedBlocks(request.id, request.numComputedTokens);
    std::int64_t needed = 0;
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        needed += m_groups[g].numBlocksToAllocate(request.id, numTokensNeedSlot, hitOf(g));
    if (needed > m_pool.numFreeBlocks())
        return false;
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        m_groups[g].saveComputedBlocks(request.id, hitOf(g));
    for (auto& group : m_groups)
        group.allocateNewBlocks(request.id, numTokensNeedSlot);
    if (!m_config.prefixCaching)
        return true;
    // The blocks the scheduled tokens fill are cached now (a prompt block already full at allocation), so
    // that requests admitted later in the same step can hit them.
    updateBlockHashes(request);
    const std::int64_t numTokensToCache = std::min(numComputed + numNewTokens, request.numTokens());
    for (auto& group : m_groups)
        group.cacheBlocks(request, numTokensToCache);
    return true;
}

void KVCacheManager::free(const Request& request) {
    for (auto& group : m_groups)
        group.free(request.id);
}

const std::vector<BlockId>& KVCacheManager::blockTable(const std::string& request, std::int32_t group) const {
    return m_groups.at(static_cast<std::size_t>(group)).table(request);
}

std::vector<std::vector<BlockId>> KVCacheManager::blockTables(const std::string& request) const {
    std::vector<std::vector<BlockId>> tables;
    tables.reserve(m_groups.size());
    for (const auto& group : m_groups)
        tables.push_back(group.table(request));
    return tables;
}

} // namespace kvscope::paged
