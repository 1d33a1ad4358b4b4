// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/LayerGroups.h"

namespace kvscope::serving {

LayerGroups::LayerGroups(const model::Architecture& architecture) {
    const int64_t cached = architecture.numLayers() - architecture.numKvSharedLayers();
    m_groupOf.assign(static_cast<size_t>(cached), -1);
    for (int64_t layer = 0; layer < cached; ++layer) {
        const model::AttentionKind kind = architecture.attentionKind(layer);
        if (architecture.hasLinearAttention(layer)) {
            m_linear = true;
        }
        if (!architecture.hasAttention(layer) || architecture.isKvShared(layer)) {
            continue;
        }
        Group wanted;
        if (kind == model::AttentionKind::SlidingAttention) {
            wanted = {Kind::Sliding, architecture.window(layer), {}};
        } else if (kind == model::AttentionKind::ChunkedAttention) {
            wanted = {Kind::Chunked, architecture.window(layer), {}};
        }
        size_t index = 0;
        while (index < m_groups.size() &&
               !(m_groups[index].kind == wanted.kind && m_groups[index].window == wanted.window)) {
            ++index;
        }
        if (index == m_groups.size()) {
            m_groups.push_back(wanted);
        }
        m_groups[index].layers.push_back(layer);
        m_groupOf[static_cast<size_t>(layer)] = static_cast<int64_t>(index);
    }
}

const char* LayerGroups::kindName(Kind kind) {
    switch (kind) {
    case Kind::Full:
        return "full";
    case Kind::Sliding:
        return "sliding";
    case Kind::Chunked:
        return "chunked";
    }
    return "full";
}

} // namespace kvscope::serving
