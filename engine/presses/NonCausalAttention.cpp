// SPDX-License-Identifier: GPL-3.0-or-later
// NonCausalAttn (kvpress's NonCausalAttnPress): unmasked attention within chunks of the prompt.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(non_causal_attention) {
    kvscope::config::PressDescription press;
    press.name = "non_causal_attention";
    press.referenceName = "NonCausalAttnPress";
    press.displayName = "NonCausalAttn";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "attention each token receives from its chunk's queries, unmasked, times its value norm";
    press.options = {{"chunk_size", "int", "256", "tokens per chunk of non-causal attention"}};
    press.sentence = "the {dropped} that received the least attention from every query of their "
                     "{chunk_size}-token chunk, weighted by value norm, were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/NonCausalAttentionPress.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

NonCausalAttentionPress::NonCausalAttentionPress(int64_t chunkSize) : m_chunkSize(chunkSize) {
    if (chunkSize < 1) {
        throw std::invalid_argument("NonCausalAttn's chunk_size must be at least 1, got " +
                                    std::to_string(chunkSize));
    }
}

at::Tensor NonCausalAttentionPress::chunkedAttention(const at::Tensor& queries, const at::Tensor& keys,
                                                     int64_t chunkSize) {
    const int64_t batch = keys.size(0);
    const int64_t heads = keys.size(1);
    const int64_t length = keys.size(2);
    const int64_t dim = keys.size(3);
    const int64_t chunks = (length + chunkSize - 1) / chunkSize;
    const int64_t padded = chunks * chunkSize;
    at::Tensor q = queries;
    at::Tensor k = keys;
    if (padded > length) {
        q = at::cat({q, at::zeros({batch, heads, padded - length, dim}, q.options())}, 2);
        k = at::cat({k, at::zeros({batch, heads, padded - length, dim}, k.options())}, 2);
    }
    // No 1/sqrt(D), as kvpress.
    at::Tensor dots = at::matmul(q.view({batch, heads, chunks, chunkSize, dim}),
                                 k.view({batch, heads, chunks, chunkSize, dim}).transpose(-2, -1));
    const at::Tensor invalid =
        at::arange((chunks - 1) * chunkSize, padded, keys.options().dtype(at::kLong)) >= length;
    at::Tensor last = dots.select(2, chunks - 1);
    // Padded query rows become 0, then padded key columns -1e-9 (not -inf; applied second, so it wins).
    last.masked_fill_(invalid.view({1, 1, chunkSize, 1}), 0.0);
    last.masked_fill_(invalid.view({1, 1, 1, chunkSize}), -1e-9);
    const at::Tensor attention = at::softmax(dots.to(at::kFloat), -1);
    return attention.sum(-2).reshape({batch, heads, padded}).narrow(-1, 0, length);
}

at::Tensor NonCausalAttentionPress::sliceScores(const PressInputs& inputs, int64_t first, int64_t rows,
                                                int64_t chunkSize) {
    const at::Tensor cos = inputs.cos.narrow(-2, first, rows).unsqueeze(1);
    const at::Tensor sin = inputs.sin.narrow(-2, first, rows).unsqueeze(1);
    PressInputs slice = inputs;
    slice.hiddenStates = inputs.hiddenStates.narrow(1, first, rows);
    const at::Tensor query = model::ops::applyRotary(queries(slice, rows), cos, sin);
    const at::Tensor keys = inputs.keys.narrow(2, first, rows);
    const at::Tensor values = inputs.values.narrow(2, first, rows);
    const at::Tensor attention = groupMean(
        chunkedAttention(query, repeatKv(keys, inputs.numHeads), chunkSize), inputs.numKeyValueHeads);
    const at::Tensor scores = at::avg_pool1d(attention * values.norm(2, -1), {3}, {1}, {1}, false, true);
    return zNormalized(scores);
}

at::Tensor NonCausalAttentionPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.hiddenStates, "hidden states", name());
    require(inputs.queryWeight, "query projection", name());
    require(inputs.cos, "rotary rows", name());
    require(inputs.values, "values", name());
    requirePrefillRows(inputs);
    const int64_t length = inputs.keys.size(2);
    return sliceScores(inputs, 0, length, m_chunkSize);
}

} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(non_causal_attention) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::NonCausalAttentionPress>(options.integer("chunk_size", 1));
    };
    return factory;
}
#endif
