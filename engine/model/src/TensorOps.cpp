// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/TensorOps.h"

#include "DecodeAttention.h"
#include "KernelThreads.h"
#include "PrefillAttention.h"
#include "RowKernels.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kvscope::model::ops {

namespace {

/// Elements of a 2-byte weight widened at once: a vocabulary head (150k x 1024) is widened a block of rows
/// at a time, so that no widened copy of the whole matrix ever exists (16 MB of float32 at most).
constexpr int64_t kWidenedElements = int64_t{1} << 22;
/// Score elements [batch, heads, query rows, keys] attention computes at once (32 MB of float32).
constexpr int64_t kScoreElements = int64_t{1} << 23;
/// Query rows per chunk of a masked prompt longer than that: a causal chunk skips the keys after its last row, so
/// smaller chunks skip more (256: about 55% of a 2048-token prompt's scores instead of 64% at the budget's 455).
constexpr int64_t kMaskedChunk = 256;
/// Values a kernel thread's task of row loops (rmsNorm, applyRotary, gatedActivation) takes at least: a decode
/// step's rows run on the calling thread alone, a prompt's split so that a task outweighs its scheduling.
constexpr int64_t kRowTaskElements = int64_t{1} << 14;

/// Calls rowTask(first, last) over [0, rows) on the kernel threads, in tasks of kRowTaskElements values or more.
/// LibTorch's operations (on its own threads) often come next: the kernel threads sleep at once, not to spin on
/// the cores those need.
void forRows(int64_t rows, int64_t width, const KernelThreads::Task& rowTask) {
    KernelThreads::shared().parallelFor(rows, std::max<int64_t>(1, kRowTaskElements / std::max<int64_t>(width, 1)),
                                        rowTask, 0, KernelThreads::After::Sleep);
}

at::Tensor plainLinear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
    return bias.defined() ? at::linear(input, weight, bias) : at::linear(input, weight);
}

} // namespace

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
    if (weight.scalar_type() == input.scalar_type()) {
        return plainLinear(input, weight, bias);
    }
    // A checkpoint's bf16/f16 weight computes in the input's float32: widening is exact, so the result is
    // what a weight widened at load gave (tests/bench/MatmulDtypeBenchmark.cpp measures this against bf16).
    const at::ScalarType dtype = input.scalar_type();
    const int64_t rows = weight.size(0);
    const int64_t block = std::max<int64_t>(1, kWidenedElements / std::max<int64_t>(1, weight.size(1)));
    if (rows <= block) {
        return plainLinear(input, weight.to(dtype), bias.defined() ? bias.to(dtype) : bias);
    }
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = rows;
    at::Tensor output = at::empty(shape, input.options());
    for (int64_t first = 0; first < rows; first += block) {
        const int64_t count = std::min(block, rows - first);
        output.narrow(-1, first, count)
            .copy_(plainLinear(input, weight.narrow(0, first, count).to(dtype),
                               bias.defined() ? bias.narrow(0, first, count).to(dtype) : bias));
    }
    return output;
}

at::Tensor embed(const at::Tensor& weight, const at::Tensor& ids) {
    at::Tensor rows = at::embedding(weight, ids);
    return rows.scalar_type() == at::kFloat || rows.scalar_type() == at::kDouble ? rows : rows.to(at::kFloat);
}

int64_t attentionQueryChunk(int64_t batch, int64_t heads, int64_t kvLength) {
    return std::max<int64_t>(1, kScoreElements / std::max<int64_t>(1, batch * heads * kvLength));
}

namespace {

/// rmsNorm of float rows in one loop per row (LibTorch's seven operations each cost a pass over memory): the
/// reference's arithmetic, the mean of squares summed in double.
at::Tensor rmsNormRows(const at::Tensor& input, const at::Tensor& weight, double eps, bool addOne) {
    const at::Tensor x = input.contiguous();
    const at::Tensor w = weight.contiguous();
    at::Tensor out = at::empty_like(x);
    const int64_t width = x.size(-1);
    const int64_t rows = x.numel() / width;
    const float* in = x.data_ptr<float>();
    const float* scale = w.data_ptr<float>();
    float* result = out.data_ptr<float>();
    forRows(rows, width, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            // The mean of squares in double: a float sum in loop order strays further from the reference's (a tree
            // of float sums) than the logits' 1e-4 allows on a 576-wide row.
            const double squares = rows::sumOfSquares(in + r * width, width);
            const float mean = static_cast<float>(squares / static_cast<double>(width));
            const float inverse =
                static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean + static_cast<float>(eps))));
            rows::scaleRow(in + r * width, scale, inverse, addOne, width, result + r * width);
        }
    });
    return out;
}

} // namespace

at::Tensor rmsNorm(const at::Tensor& input, const at::Tensor& weight, double eps, bool addOne) {
    const bool rowsLoop = input.device().is_cpu() && weight.device().is_cpu() && input.scalar_type() == at::kFloat &&
                          weight.scalar_type() == at::kFloat && weight.dim() == 1 && input.dim() >= 1 &&
                          weight.size(0) == input.size(-1) && input.numel() > 0 && !input.requires_grad() &&
                          !weight.requires_grad();
    if (rowsLoop) {
        return rmsNormRows(input, weight, eps, addOne);
    }
    at::Tensor normalised = input * at::rsqrt(input.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return addOne ? normalised * (weight + 1.0) : weight * normalised;
}

at::Tensor layerNorm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, double eps) {
    return at::layer_norm(input, {input.size(-1)}, weight, bias, eps);
}

at::Tensor activate(const at::Tensor& input, Activation activation) {
    switch (activation) {
    case Activation::Silu:
        return at::silu(input);
    case Activation::Gelu:
        return at::gelu(input);
    case Activation::GeluTanh:
        return at::gelu(input, "tanh");
    }
    return input;
}

at::Tensor gatedActivation(const at::Tensor& gate, const at::Tensor& up, Activation activation) {
    const bool rowsLoop = rows::gatedActivates(activation) && gate.device().is_cpu() && up.device().is_cpu() &&
                          gate.scalar_type() == at::kFloat && up.scalar_type() == at::kFloat && gate.dim() >= 1 &&
                          gate.sizes() == up.sizes() && gate.numel() > 0 && !gate.requires_grad() &&
                          !up.requires_grad();
    if (!rowsLoop) {
        return activate(gate, activation) * up;
    }
    // [rows, width] views where the rows are evenly strided (a narrow of a stacked product's output), else copies.
    const int64_t width = gate.size(-1);
    const auto rowsOf = [width](const at::Tensor& t) {
        return (t.stride(-1) == 1 ? t : t.contiguous()).reshape({-1, width});
    };
    const at::Tensor gates = rowsOf(gate);
    const at::Tensor ups = rowsOf(up);
    at::Tensor out = at::empty({gates.size(0), width}, gate.options());
    const float* g = gates.data_ptr<float>();
    const float* u = ups.data_ptr<float>();
    float* result = out.data_ptr<float>();
    const int64_t gateStride = gates.stride(0);
    const int64_t upStride = ups.stride(0);
    forRows(gates.size(0), width, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            rows::gateRow(g + r * gateStride, u + r * upStride, activation, width, result + r * width);
        }
    });
    return out.view(gate.sizes());
}

at::Tensor inverseFrequencies(int64_t rotaryDim, double theta,
                              const std::optional<config::RopeScaling>& scaling, const at::Device& device) {
    const auto floats = at::TensorOptions().dtype(at::kFloat).device(device);
    // inv_freq = 1 / theta ** (arange(0, dim, 2) / dim), as the reference's default rope init.
    at::Tensor exponents =
        at::arange(0, rotaryDim, 2, floats.dtype(at::kLong)).to(at::kFloat) / static_cast<double>(rotaryDim);
    at::Tensor inverse = 1.0 / at::pow(theta, exponents);
    if (!scaling) {
        return inverse;
    }
    const double factor = *scaling->factor;
    if (scaling->type == "linear") {
        return inverse / factor;
    }
    // llama3: long wavelengths slow down by `factor`, short ones stay, the band between is blended.
    const double low = *scaling->lowFreqFactor;
    const double high = *scaling->highFreqFactor;
    const auto context = static_cast<double>(*scaling->originalMaxPositionEmbeddings);
    const double lowFreqWavelength = context / low;
    const double highFreqWavelength = context / high;
    at::Tensor wavelength = 2.0 * M_PI / inverse;
    at::Tensor scaled = at::where(wavelength > lowFreqWavelength, inverse / factor, inverse);
    at::Tensor smooth = (context / wavelength - low) / (high - low);
    at::Tensor smoothed = (1.0 - smooth) * scaled / factor + smooth * scaled;
    at::Tensor medium =
        (wavelength < highFreqWavelength).logical_not() & (wavelength > lowFreqWavelength).logical_not();
    return at::where(medium, smoothed, scaled);
}

std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& positions, const at::Tensor& inverseFrequencies) {
    at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inverseFrequencies.view({1, 1, -1});
    at::Tensor embedding = at::cat({freqs, freqs}, -1);
    return {embedding.cos().unsqueeze(1), embedding.sin().unsqueeze(1)};
}

namespace {

/// applyRotary in one loop per row, where the tensor formula costs six operations: the same float products and
/// sum per value (x * cos + rotate_half(x) * sin, each rounded as LibTorch rounds it).
at::Tensor rotateRows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    // x's rows where they are (splitHeads' view strides tokens by the heads' width); the output contiguous.
    const at::Tensor in = x.stride(3) == 1 ? x : x.contiguous();
    const at::Tensor c = cos.contiguous();
    const at::Tensor s = sin.contiguous();
    at::Tensor out = at::empty(in.sizes(), in.options());
    const int64_t heads = in.size(1);
    const int64_t length = in.size(2);
    const int64_t dim = in.size(3);
    const float* source = in.data_ptr<float>();
    const float* cosines = c.data_ptr<float>();
    const float* sines = s.data_ptr<float>();
    float* result = out.data_ptr<float>();
    const int64_t strides[3] = {in.stride(0), in.stride(1), in.stride(2)};
    // Row r is (batch, head, token) = (r / (heads * length), r / length % heads, r % length).
    forRows(in.numel() / dim, dim, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            const int64_t b = r / (heads * length);
            const int64_t t = r % length;
            const float* row = source + b * strides[0] + r / length % heads * strides[1] + t * strides[2];
            const int64_t table = (b * length + t) * dim;
            rows::rotateRow(row, cosines + table, sines + table, dim, result + r * dim);
        }
    });
    return out;
}

} // namespace

at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const bool rowsLoop = x.dim() == 4 && cos.dim() == 4 && sin.dim() == 4 && x.device().is_cpu() &&
                          cos.device().is_cpu() && sin.device().is_cpu() && x.scalar_type() == at::kFloat &&
                          cos.scalar_type() == at::kFloat && sin.scalar_type() == at::kFloat &&
                          cos.size(-1) == x.size(-1) && x.size(-1) % 2 == 0 && cos.sizes() == sin.sizes() &&
                          cos.size(0) == x.size(0) && cos.size(1) == 1 && cos.size(2) == x.size(2) &&
                          !x.requires_grad() && !cos.requires_grad() && !sin.requires_grad();
    if (rowsLoop) {
        return rotateRows(x, cos, sin);
    }
    const int64_t rotaryDim = cos.size(-1);
    if (rotaryDim < x.size(-1)) {
        at::Tensor rotating = x.narrow(-1, 0, rotaryDim);
        return at::cat({applyRotary(rotating, cos, sin), x.narrow(-1, rotaryDim, x.size(-1) - rotaryDim)},
                       -1);
    }
    const int64_t half = x.size(-1) / 2;
    at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

namespace {

/// Eager attention of the query rows `query` [B, Hq, t, D] over the KV heads' own `k`, `v` [B, Hkv, KV, D]
/// under their `mask` rows; returns the weights [B, Hq, t, KV] and the output [B, Hq, t, D]. The `groups`
/// query heads of one KV head attend as one matrix of groups x t rows (query head h reads KV head
/// h / groups, as repeat_kv), so the keys and values are read once and never copied per query head: a
/// decode step over a long cache was bound by those copies.
std::pair<at::Tensor, at::Tensor> attendRows(const at::Tensor& query, const at::Tensor& k,
                                             const at::Tensor& v, const at::Tensor& mask, double scale,
                                             double softcap, const at::Tensor& hiddenSlots, int64_t kvHeads,
                                             int64_t groups) {
    const int64_t batch = query.size(0);
    const int64_t rows = query.size(2);
    const int64_t kvLength = k.size(2);
    const at::Tensor grouped = query.reshape({batch, kvHeads, groups * rows, query.size(3)});
    const bool kernels = DecodeAttention::applies(grouped, k) && DecodeAttention::applies(grouped, v);
    at::Tensor scores = (kernels ? DecodeAttention::scores(grouped, k) : at::matmul(grouped, k.transpose(-1, -2))) *
                        scale;  // [B, Hkv, groups * t, KV]
    if (softcap > 0.0) {
        scores = at::tanh(scores / softcap) * softcap;
    }
    // [B, Hkv, groups, t, KV]: the mask's rows broadcast over the query heads, hidden slots per KV head.
    at::Tensor perHead = scores.view({batch, kvHeads, groups, rows, kvLength});
    if (mask.defined()) {
        // Eager attention's `finfo(dtype).min`, not -inf: a row with no allowed key stays finite.
        perHead = perHead.masked_fill(mask.unsqueeze(2).logical_not(), std::numeric_limits<float>::lowest());
    }
    if (hiddenSlots.defined()) {
        // Hide the first L slots of each KV head in place, without building a per-head mask (AdaKV's runs
        // pay for it at every step).
        const int64_t hidden = hiddenSlots.size(2);
        perHead.narrow(-1, 0, hidden)
            .masked_fill_(hiddenSlots.view({hiddenSlots.size(0), kvHeads, 1, 1, hidden}),
                          std::numeric_limits<float>::lowest());
    }
    const at::Tensor weights = at::softmax(perHead.view({batch, kvHeads, groups * rows, kvLength}), -1);
    const at::Tensor output = kernels ? DecodeAttention::output(weights, v) : at::matmul(weights, v); // [B, Hkv, groups * t, D]
    return {weights.view({batch, kvHeads * groups, rows, kvLength}),
            output.view({batch, kvHeads * groups, rows, v.size(3)})};
}

/// The keys [from, to) that some row of `rowMask` [B|1, 1, rows, KV] may see: a causal prompt's early rows see
/// only the first keys, a sliding window's only the last, and the rest need no scores. All keys when a row sees
/// none (its softmax is uniform over every key) or, with `fromZero` (slots a press hides are counted from key 0),
/// from key 0.
std::pair<int64_t, int64_t> allowedKeys(const at::Tensor& rowMask, bool fromZero) {
    const int64_t kvLength = rowMask.size(3);
    if (!rowMask.any(-1).all().item<bool>()) {
        return {0, kvLength};
    }
    const at::Tensor seen = rowMask.reshape({-1, kvLength}).any(0).nonzero();
    const int64_t from = fromZero ? 0 : seen.min().item<int64_t>();
    return {from, seen.max().item<int64_t>() + 1};
}

} // namespace

at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                  const at::Tensor& mask, double scale, double softcap, at::Tensor* probabilities,
                  const at::Tensor& hiddenSlots, const AttentionWeightsSink& weightsSink,
                  int64_t queryChunk) {
    const at::Tensor& k = keys;
    const at::Tensor& v = values;
    const int64_t kvHeads = keys.size(1);
    const int64_t groups = query.size(1) / kvHeads;
    const int64_t batch = query.size(0);
    const int64_t heads = query.size(1);
    const int64_t length = query.size(2);
    const int64_t kvLength = keys.size(2);
    // Where no one reads the weights (and no softcap or hidden slot changes them), softmax's result alone.
    const bool resultOnly = probabilities == nullptr && !weightsSink && !hiddenSlots.defined() && softcap == 0.0;
    // A decode step's row: runs of keys on every thread, combined.
    if (resultOnly && length == 1 && DecodeAttention::fuses(query, k, v, mask)) {
        at::Tensor output = DecodeAttention::attend(query, k, v, mask, scale);
        if (output.defined()) {
            return output;
        }
    }
    // A prompt's rows (more than one): the tiles' running softmax.
    if (resultOnly && length > 1 && PrefillAttention::applies(query, k, v, mask)) {
        at::Tensor output = PrefillAttention::attend(query, k, v, mask, scale);
        if (output.defined()) {
            return output;
        }
    }
    // A long prompt's rows go in chunks of at most kMaskedChunk, each against only the keys its mask lets it see.
    const int64_t chunk = queryChunk > 0 ? queryChunk
                                         : std::min(attentionQueryChunk(batch, heads, kvLength),
                                                    mask.defined() ? kMaskedChunk : kvLength);
    if (length <= chunk) {
        auto [weights, output] = attendRows(query, k, v, mask, scale, softcap, hiddenSlots, kvHeads, groups);
        if (probabilities != nullptr) {
            *probabilities = weights;
        }
        if (weightsSink) {
            weightsSink(weights, 0);
        }
        return output.transpose(1, 2).reshape({batch, length, -1}); // [B, T, Hq * D]
    }
    // A long prompt attends a chunk of query rows at a time: the scores of all heads for all rows
    // ([B, Hq, T, KV]) never exist at once. Rows are independent, so the result is the unchunked one.
    at::Tensor output = at::empty({batch, length, heads, v.size(3)}, query.options());
    if (probabilities != nullptr) {
        *probabilities = at::empty({batch, heads, length, kvLength}, query.options());
    }
    const bool maskPerRow = mask.defined() && mask.size(2) == length;
    for (int64_t first = 0; first < length; first += chunk) {
        const int64_t rows = std::min(chunk, length - first);
        const at::Tensor rowMask = maskPerRow ? mask.narrow(2, first, rows) : mask;
        const auto [from, to] = maskPerRow ? allowedKeys(rowMask, hiddenSlots.defined()) : std::pair{int64_t{0}, kvLength};
        at::Tensor hidden = hiddenSlots;
        if (hidden.defined() && hidden.size(2) > to) {
            hidden = hidden.narrow(2, 0, to);
        }
        auto [seen, attended] = attendRows(query.narrow(2, first, rows), k.narrow(2, from, to - from),
                                           v.narrow(2, from, to - from),
                                           rowMask.defined() ? rowMask.narrow(3, from, to - from) : rowMask, scale,
                                           softcap, hidden, kvHeads, groups);
        at::Tensor weights = seen;
        if ((probabilities != nullptr || weightsSink) && to - from < kvLength) {
            // The keys left out had weight exactly 0 (their scores were the dtype's lowest).
            weights = at::zeros({batch, heads, rows, kvLength}, seen.options());
            weights.narrow(3, from, to - from).copy_(seen);
        }
        output.narrow(1, first, rows).copy_(attended.transpose(1, 2));
        if (probabilities != nullptr) {
            probabilities->narrow(2, first, rows).copy_(weights);
        }
        if (weightsSink) {
            weightsSink(weights, first);
        }
    }
    return output.view({batch, length, -1});
}

at::Tensor splitHeads(const at::Tensor& x, int64_t heads) {
    return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

} // namespace kvscope::model::ops
