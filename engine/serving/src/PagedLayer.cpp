// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/PagedLayer.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::serving {

PagedLayer::PagedLayer(const at::Tensor& keyPool, const at::Tensor& valuePool, const SlotBinding& binding,
                       bool sliding, bool hybrid)
    : m_keyPool(keyPool.flatten(0, 1)), m_valuePool(valuePool.flatten(0, 1)), m_binding(binding),
      m_sliding(sliding) {
    if (hybrid) {
        m_linear = std::make_unique<cache::LinearAttentionLayer>();
    }
}

void PagedLayer::restart() {
    if (m_linear) {
        m_linear = std::make_unique<cache::LinearAttentionLayer>();
    }
}

cache::KeyValueStates PagedLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    const int64_t batch = m_binding.batch;
    const int64_t tokens = m_binding.queryLength;
    if (keyStates.size(0) != batch || keyStates.size(2) != tokens) {
        throw cache::CacheError(
            cache::ErrorKind::Value,
            "a paged layer takes the pass's " + std::to_string(batch) + " row(s) of " +
                std::to_string(tokens) + " scheduled tokens [batch, heads, tokens, head_dim], got " +
                std::to_string(keyStates.size(0)) + " row(s) of " + std::to_string(keyStates.size(2)));
    }
    if (m_updated) {
        throw cache::CacheError(cache::ErrorKind::Runtime, "a paged layer was updated twice in one pass");
    }
    // [B, H, T, D] -> [B * T, H, D] rows into their slots, then every row's slots in position order back out.
    const int64_t heads = m_keyPool.size(1);
    const int64_t dim = m_keyPool.size(2);
    auto rowsOf = [&](const at::Tensor& states) {
        return batch == 1 ? states.select(0, 0).transpose(0, 1)
                          : states.transpose(1, 2).reshape({-1, heads, dim});
    };
    m_keyPool.index_copy_(0, m_binding.writeSlots, rowsOf(keyStates));
    m_valuePool.index_copy_(0, m_binding.writeSlots, rowsOf(valueStates));
    const int64_t length = m_binding.sizes.kvLength;
    m_lastKeys =
        m_keyPool.index_select(0, m_binding.readSlots).view({batch, length, heads, dim}).transpose(1, 2);
    m_lastValues =
        m_valuePool.index_select(0, m_binding.readSlots).view({batch, length, heads, dim}).transpose(1, 2);
    m_updated = true;
    return {m_lastKeys, m_lastValues};
}

cache::MaskSizes PagedLayer::maskSizes(int64_t queryLength) const {
    if (queryLength != m_binding.queryLength) {
        throw cache::CacheError(cache::ErrorKind::Value, "mask sizes asked for " +
                                                             std::to_string(queryLength) +
                                                             " tokens, but the pass schedules " +
                                                             std::to_string(m_binding.queryLength));
    }
    return m_binding.sizes;
}

int64_t PagedLayer::seqLength() const {
    return m_binding.computed + (m_updated ? m_binding.queryLength : 0);
}

void PagedLayer::reset() {
    m_updated = false;
    m_lastKeys = at::Tensor();
    m_lastValues = at::Tensor();
    restart();
}

void PagedLayer::refuse(const char* operation) const {
    throw cache::CacheError(
        cache::ErrorKind::Value,
        std::string("a paged cache cannot ") + operation +
            ": its blocks belong to the scheduler's block tables (use a dynamic cache with "
            "kvscope-cli run for beams, rewinds, presses and offloading)");
}

void PagedLayer::reorder(const at::Tensor&) {
    refuse("reorder beams");
}
void PagedLayer::crop(int64_t) {
    refuse("crop");
}
void PagedLayer::batchRepeatInterleave(int64_t) {
    refuse("repeat its batch");
}
void PagedLayer::batchSelectIndices(const at::Tensor&) {
    refuse("select batch rows");
}
void PagedLayer::keepTokens(const at::Tensor&) {
    refuse("keep a press's tokens");
}
void PagedLayer::offload() {
    refuse("offload");
}
void PagedLayer::prefetch() {
    refuse("prefetch");
}

int64_t PagedLayer::storedBytes() const {
    const int64_t linear = m_linear ? m_linear->storedBytes() : 0;
    return storedTokens() * m_keyPool.size(1) * m_keyPool.size(2) *
               static_cast<int64_t>(m_keyPool.element_size()) * 2 +
           linear;
}

} // namespace kvscope::serving
