// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Small helpers shared by the cache event tests (header-only).

#include "kvscope/trace/Event.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace kvscope::cache::testing {

// `count` tokens `[1, heads, count, headDim]` whose values start at `first` (distinct per token).
inline at::Tensor tokens(int64_t count, float first = 1.0f, int64_t heads = 1, int64_t headDim = 1) {
    return at::arange(first, first + static_cast<float>(count * heads * headDim), at::kFloat)
        .view({1, heads, count, headDim});
}

// The events of one kind (optionally of one layer), in emission order.
template <typename Payload>
std::vector<std::pair<trace::Event, Payload>> eventsOf(const std::vector<trace::Event>& events, int32_t layer = -2) {
    std::vector<std::pair<trace::Event, Payload>> found;
    for (const trace::Event& event : events) {
        if (const auto* payload = std::get_if<Payload>(&event.payload)) {
            if (layer == -2 || event.layer == layer) {
                found.emplace_back(event, *payload);
            }
        }
    }
    return found;
}

} // namespace kvscope::cache::testing
