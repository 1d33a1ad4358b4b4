// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/KvPools.h"

#include <ATen/ATen.h>

namespace kvscope::serving {

KvPools::KvPools(const model::Architecture& architecture, const LayerGroups& groups, int64_t numBlocks,
                 int64_t blockSize, const at::Device& device)
    : m_numBlocks(numBlocks), m_blockSize(blockSize) {
    m_keys.resize(static_cast<size_t>(groups.cacheLayers()));
    m_values.resize(static_cast<size_t>(groups.cacheLayers()));
    const auto options = at::TensorOptions().dtype(at::kFloat).device(device);
    for (const LayerGroups::Group& group : groups.groups()) {
        for (const int64_t layer : group.layers) {
            const std::vector<int64_t> shape{numBlocks, blockSize, architecture.numKvHeads(),
                                             architecture.headDim()};
            m_keys[static_cast<size_t>(layer)] = at::zeros(shape, options);
            m_values[static_cast<size_t>(layer)] = at::zeros(shape, options);
        }
    }
}

std::vector<int64_t> KvPools::blockBytes(const model::Architecture& architecture, const LayerGroups& groups,
                                         int64_t blockSize) {
    const int64_t perLayer = 2 * blockSize * architecture.numKvHeads() * architecture.headDim() *
                             static_cast<int64_t>(sizeof(float));
    std::vector<int64_t> bytes;
    for (const LayerGroups::Group& group : groups.groups()) {
        bytes.push_back(perLayer * static_cast<int64_t>(group.layers.size()));
    }
    return bytes;
}

int64_t KvPools::bytes() const {
    int64_t total = 0;
    for (size_t layer = 0; layer < m_keys.size(); ++layer) {
        if (m_keys[layer].defined()) {
            total += static_cast<int64_t>(m_keys[layer].nbytes() + m_values[layer].nbytes());
        }
    }
    return total;
}

} // namespace kvscope::serving
