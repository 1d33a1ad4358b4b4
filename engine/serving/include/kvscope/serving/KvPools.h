// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/serving/LayerGroups.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <vector>

namespace kvscope::serving {

/// The paged key/value storage of a model: for every layer that stores its own keys/values, a key pool
/// and a value pool of [numBlocks, blockSize, kvHeads, headDim], zero-initialised; block b of a group
/// is slot range [b * blockSize, (b + 1) * blockSize) of each of its layers' pools.
class KvPools {
public:
    KvPools(const model::Architecture& architecture, const LayerGroups& groups, int64_t numBlocks,
            int64_t blockSize, const at::Device& device);

    /// [numBlocks, blockSize, kvHeads, headDim]; undefined for a layer without its own keys/values.
    const at::Tensor& keys(int64_t layer) const { return m_keys.at(static_cast<size_t>(layer)); }
    const at::Tensor& values(int64_t layer) const { return m_values.at(static_cast<size_t>(layer)); }
    int64_t numBlocks() const { return m_numBlocks; }
    int64_t blockSize() const { return m_blockSize; }
    /// Bytes of all pools together.
    int64_t bytes() const;
    /// Bytes one block holds in each of `groups`' groups: keys and values of every layer of the group, as the
    /// pools store them (float32), without allocating them (a session's metadata records it).
    static std::vector<int64_t> blockBytes(const model::Architecture& architecture, const LayerGroups& groups,
                                           int64_t blockSize);

private:
    std::vector<at::Tensor> m_keys;
    std::vector<at::Tensor> m_values;
    int64_t m_numBlocks;
    int64_t m_blockSize;
};

} // namespace kvscope::serving
