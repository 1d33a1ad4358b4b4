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
    if (keyStates.size(0) != 1 || keyStates.size(2) != m_binding.queryLength) {
        throw cache::CacheError(cache::ErrorKind::Value,
                                "a paged layer takes one request's " + std::to_string(m_binding.queryLength) +
                                    " scheduled tokens [1, heads, tokens, head_dim], got batch " +
                                    std::to_string(keyStates.size(0)) + " and " +
                                    std::to_string(keyStates.size(2)) + " tokens");
    }
    if (m_updated) {
        throw cache::CacheError(cache::ErrorKind::Runtime, "a paged layer was updated twice in one pass");
    }
    // [1, H, T, D] -> [T, H, D] rows into the request's slots, then its rows in position order back out.
    m_keyPool.index_copy_(0, m_binding.writeSlots, keyStates.select(0, 0).transpose(0, 1));
    m_valuePool.index_copy_(0, m_binding.writeSlots, valueStates.select(0, 0).transpose(0, 1));
    m_lastKeys = m_keyPool.index_select(0, m_binding.readSlots).transpose(0, 1).unsqueeze(0);
    m_lastValues = m_valuePool.index_select(0, m_binding.readSlots).transpose(0, 1).unsqueeze(0);
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
