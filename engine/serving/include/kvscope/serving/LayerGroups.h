// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::serving {

/// The layer groups of a paged model: layers that attend the same way (full, or one sliding window, or
/// one chunk size) share one block table per request, as vLLM's hybrid allocator groups them. Only
/// layers that store their own keys/values belong to a group: linear-attention layers keep a
/// per-request state and Gemma 3n's shared-KV layers read their source layer's states.
class LayerGroups {
public:
    enum class Kind { Full, Sliding, Chunked };
    struct Group {
        Kind kind = Kind::Full;
        /// Sliding window or chunk size; 0 for full attention.
        int64_t window = 0;
        std::vector<int64_t> layers;
    };

    explicit LayerGroups(const model::Architecture& architecture);

    const std::vector<Group>& groups() const { return m_groups; }
    /// The group of a layer's keys/values, or -1 for a layer without its own (linear, shared-KV).
    int64_t groupOf(int64_t layer) const { return m_groupOf.at(static_cast<size_t>(layer)); }
    /// Layers a per-request cache holds (the model's layers minus the trailing shared-KV ones).
    int64_t cacheLayers() const { return static_cast<int64_t>(m_groupOf.size()); }
    /// Whether some layer keeps a linear-attention state, which a prefix hit cannot restore.
    bool hasLinearAttention() const { return m_linear; }
    /// "full", "sliding", "chunked".
    static const char* kindName(Kind kind);

private:
    std::vector<Group> m_groups;
    std::vector<int64_t> m_groupOf;
    bool m_linear = false;
};

} // namespace kvscope::serving
