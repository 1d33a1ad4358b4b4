// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/MaskBuilder.h"

#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>

namespace kvscope::model {

at::Tensor MaskBuilder::build(AttentionKind kind, int64_t window, int64_t queryLength, int64_t queryOffset,
                              const cache::MaskSizes& sizes, const at::Tensor& paddingMask, const at::Device& device) {
    if (kind == AttentionKind::LinearAttention) {
        throw ModelError("linear-attention layers take no attention mask");
    }
    if ((kind == AttentionKind::SlidingAttention || kind == AttentionKind::ChunkedAttention) && window <= 0) {
        throw ModelError(std::string(Architecture::attentionKindName(kind)) + " masks need a window/chunk size > 0, got " +
                         std::to_string(window));
    }
    const auto longs = at::TensorOptions().dtype(at::kLong).device(device);
    at::Tensor q = (at::arange(queryLength, longs) + queryOffset).view({1, 1, queryLength, 1});
    at::Tensor kv = (at::arange(sizes.kvLength, longs) + sizes.kvOffset).view({1, 1, 1, sizes.kvLength});
    at::Tensor mask = kv <= q;
    if (kind == AttentionKind::SlidingAttention) {
        mask = mask & (kv > q - window);
    }
    at::Tensor padding;
    if (paddingMask.defined()) {
        if (paddingMask.dim() != 2) {
            throw ModelError("the padding mask must be [batch, positions], got " + std::to_string(paddingMask.dim()) +
                             " dimensions");
        }
        padding = paddingMask.to(device).ne(0);
    }
    if (kind == AttentionKind::ChunkedAttention) {
        at::Tensor leftPadding = at::zeros({1, 1, 1, 1}, longs);
        if (padding.defined()) {
            // Leading zeros only: `(attention_mask.cumsum(-1) == 0).sum(-1)`.
            leftPadding = (padding.to(at::kLong).cumsum(-1) == 0).sum(-1).view({-1, 1, 1, 1});
        }
        mask = mask & (at::div(kv - leftPadding, window, "floor") == at::div(q - leftPadding, window, "floor"));
    }
    if (padding.defined()) {
        const int64_t needed = sizes.kvOffset + sizes.kvLength;
        if (needed > padding.size(1)) {
            // prepare_padding_mask: static caches ask for more positions than exist; those are padding.
            padding = at::cat({padding, at::zeros({padding.size(0), needed - padding.size(1)},
                                                  padding.options())},
                              1);
        }
        mask = mask & padding.narrow(1, sizes.kvOffset, sizes.kvLength).view({padding.size(0), 1, 1, sizes.kvLength});
    }
    const int64_t batch = padding.defined() ? padding.size(0) : 1;
    return mask.expand({batch, 1, queryLength, sizes.kvLength});
}

std::string MaskBuilder::render(const at::Tensor& mask, int64_t batch) {
    at::Tensor rows = mask.select(0, batch).select(0, 0).to(at::kCPU).to(at::kBool).contiguous();
    std::string text;
    for (int64_t i = 0; i < rows.size(0); ++i) {
        if (i > 0) {
            text += ' ';
        }
        for (int64_t j = 0; j < rows.size(1); ++j) {
            text += rows[i][j].item<bool>() ? '1' : '.';
        }
    }
    return text;
}

} // namespace kvscope::model
