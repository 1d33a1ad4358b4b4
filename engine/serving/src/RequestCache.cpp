// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/RequestCache.h"

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/serving/PagedLayer.h"

#include <ATen/ATen.h>
#include <algorithm>
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

at::Tensor
RequestCache::bindDecodeBatch(const std::vector<const std::vector<std::vector<int64_t>>*>& blockTables,
                              const std::vector<int64_t>& computed) {
    if (!m_linearLayers.empty()) {
        throw std::runtime_error("a decode batch cannot carry per-request linear-attention states");
    }
    const auto& groups = m_groups.groups();
    const int64_t padded = *std::max_element(computed.begin(), computed.end()) + 1;
    const at::Device device = m_pools.keys(groups.front().layers.front()).device();
    for (size_t group = 0; group < groups.size(); ++group) {
        std::vector<const std::vector<int64_t>*> tables;
        for (const auto* perGroup : blockTables) {
            tables.push_back(&perGroup->at(group));
        }
        *m_bindings[group] = SlotBinding::ofDecodeBatch(tables, m_pools.blockSize(), groups[group].kind,
                                                        groups[group].window, computed, padded, device);
    }
    for (PagedLayer* layer : m_paged) {
        layer->beginPass();
    }
    // Row r is real from padded index padded - (computed[r] + 1) on.
    const auto batch = static_cast<int64_t>(computed.size());
    at::Tensor mask = at::empty({batch, padded}, at::TensorOptions().dtype(at::kLong));
    int64_t* cells = mask.data_ptr<int64_t>();
    for (int64_t row = 0; row < batch; ++row) {
        const int64_t pads = padded - computed[static_cast<size_t>(row)] - 1;
        for (int64_t j = 0; j < padded; ++j) {
            cells[row * padded + j] = j < pads ? 0 : 1;
        }
    }
    return device.is_cpu() ? mask : mask.to(device);
}

} // namespace kvscope::serving
