// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/RequestCache.h"

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/serving/PagedLayer.h"

#include <stdexcept>
#include <string>

namespace kvscope::serving {

RequestCache::RequestCache(const model::Architecture& architecture, const LayerGroups& groups, KvPools& pools)
    : m_groups(groups), m_pools(pools) {
    for (size_t group = 0; group < groups.groups().size(); ++group) {
        m_bindings.push_back(std::make_unique<SlotBinding>());
    }
    std::vector<std::unique_ptr<cache::CacheLayer>> layers;
    for (int64_t layer = 0; layer < groups.cacheLayers(); ++layer) {
        const int64_t group = groups.groupOf(layer);
        if (group < 0) {
            // Linear attention only: the request's own state.
            layers.push_back(std::make_unique<cache::LinearAttentionLayer>());
            m_linearLayers.push_back(static_cast<size_t>(layer));
            continue;
        }
        const LayerGroups::Kind kind = groups.groups()[static_cast<size_t>(group)].kind;
        auto paged = std::make_unique<PagedLayer>(
            pools.keys(layer), pools.values(layer), *m_bindings[static_cast<size_t>(group)],
            kind != LayerGroups::Kind::Full,
            architecture.attentionKind(layer) == model::AttentionKind::Hybrid);
        m_paged.push_back(paged.get());
        layers.push_back(std::move(paged));
    }
    m_cache = std::make_unique<model::ModelCache>(std::make_unique<cache::Cache>(std::move(layers)));
}

RequestCache::~RequestCache() = default;

void RequestCache::bind(const std::vector<std::vector<int64_t>>& blockTables, int64_t computed,
                        int64_t queryLength) {
    const auto& groups = m_groups.groups();
    if (blockTables.size() != groups.size()) {
        throw std::runtime_error("a request's cache needs one block table per layer group (" +
                                 std::to_string(groups.size()) + "), got " +
                                 std::to_string(blockTables.size()));
    }
    const at::Device device = m_pools.numBlocks() > 0 && !groups.empty()
                                  ? m_pools.keys(groups.front().layers.front()).device()
                                  : at::Device(at::kCPU);
    for (size_t group = 0; group < groups.size(); ++group) {
        *m_bindings[group] = SlotBinding::of(blockTables[group], m_pools.blockSize(), groups[group].kind,
                                             groups[group].window, computed, queryLength, device);
    }
    for (PagedLayer* layer : m_paged) {
        layer->beginPass();
        if (computed == 0) {
            layer->restart();
        }
    }
    if (computed == 0) {
        cache::Cache& self = m_cache->selfAttention();
        for (const size_t layer : m_linearLayers) {
            self.layer(layer).reset();
        }
    }
}

} // namespace kvscope::serving
