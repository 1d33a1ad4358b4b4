// SPDX-License-Identifier: GPL-3.0-or-later
#include "PrefillAttention.h"

#include "KernelThreads.h"
#include "VectorExp.h"

#include "kvscope/gguf/BlockType.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define KVSCOPE_PREFILL_ATTENTION_X86 1
#define KVSCOPE_PREFILL_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace kvscope::model::ops {

#if KVSCOPE_PREFILL_ATTENTION_X86
namespace {

/// Keys per tile: a tile's scores for a block's rows stay in the first-level cache.
constexpr int64_t kTileKeys = 64;
/// A block's query rows (grouped heads x tokens) times the head's width: 64 rows of 64, 16 of 256, so that the
/// block's transposed queries and sums stay in the second-level cache.
constexpr int64_t kBlockElements = 64 * 64;
constexpr int64_t kMaxBlockRows = 64;
/// Rows go through the kernels 16 at a time (two vectors of 8).
constexpr int64_t kRowStep = 16;

/// The keys a mask row allows: [first, last], and whether it allows every key in between.
struct RowKeys {
    int64_t first = 0;
    int64_t last = -1;
    bool contiguous = true;
};

/// scores[j][r] = keys[j] . queryT[.][r] for the tile's `count` keys (rows `keyStride` apart) and `rows` query rows
/// (a multiple of 16): four keys by sixteen rows at a time, the queries transposed so rows are vector lanes.
KVSCOPE_PREFILL_AVX2 void scoreTile(const float* keys, int64_t keyStride, int64_t count, const float* queryT,
                                    int64_t rows, int64_t dim, float* scores) {
    int64_t j = 0;
    for (; j + 4 <= count; j += 4) {
        const float* k0 = keys + j * keyStride;
        const float* k1 = k0 + keyStride;
        const float* k2 = k1 + keyStride;
        const float* k3 = k2 + keyStride;
        for (int64_t r = 0; r < rows; r += kRowStep) {
            __m256 a00 = _mm256_setzero_ps(), a01 = _mm256_setzero_ps(), a10 = _mm256_setzero_ps(),
                   a11 = _mm256_setzero_ps(), a20 = _mm256_setzero_ps(), a21 = _mm256_setzero_ps(),
                   a30 = _mm256_setzero_ps(), a31 = _mm256_setzero_ps();
            const float* q = queryT + r;
            for (int64_t d = 0; d < dim; ++d, q += rows) {
                const __m256 q0 = _mm256_loadu_ps(q);
                const __m256 q1 = _mm256_loadu_ps(q + 8);
                __m256 k = _mm256_broadcast_ss(k0 + d);
                a00 = _mm256_fmadd_ps(k, q0, a00);
                a01 = _mm256_fmadd_ps(k, q1, a01);
                k = _mm256_broadcast_ss(k1 + d);
                a10 = _mm256_fmadd_ps(k, q0, a10);
                a11 = _mm256_fmadd_ps(k, q1, a11);
                k = _mm256_broadcast_ss(k2 + d);
                a20 = _mm256_fmadd_ps(k, q0, a20);
                a21 = _mm256_fmadd_ps(k, q1, a21);
                k = _mm256_broadcast_ss(k3 + d);
                a30 = _mm256_fmadd_ps(k, q0, a30);
                a31 = _mm256_fmadd_ps(k, q1, a31);
            }
            float* s = scores + j * rows + r;
            _mm256_storeu_ps(s, a00);
            _mm256_storeu_ps(s + 8, a01);
            _mm256_storeu_ps(s + rows, a10);
            _mm256_storeu_ps(s + rows + 8, a11);
            _mm256_storeu_ps(s + 2 * rows, a20);
            _mm256_storeu_ps(s + 2 * rows + 8, a21);
            _mm256_storeu_ps(s + 3 * rows, a30);
            _mm256_storeu_ps(s + 3 * rows + 8, a31);
        }
    }
    for (; j < count; ++j) {
        const float* k0 = keys + j * keyStride;
        for (int64_t r = 0; r < rows; r += kRowStep) {
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
            const float* q = queryT + r;
            for (int64_t d = 0; d < dim; ++d, q += rows) {
                const __m256 k = _mm256_broadcast_ss(k0 + d);
                a0 = _mm256_fmadd_ps(k, _mm256_loadu_ps(q), a0);
                a1 = _mm256_fmadd_ps(k, _mm256_loadu_ps(q + 8), a1);
            }
            _mm256_storeu_ps(scores + j * rows + r, a0);
            _mm256_storeu_ps(scores + j * rows + r + 8, a1);
        }
    }
}

/// sumsT[d][r] += sum over the tile's keys j of values[j][d] * weights[j][r]: four value columns by sixteen rows.
KVSCOPE_PREFILL_AVX2 void accumulateTile(const float* values, int64_t valueStride, int64_t count,
                                         const float* weights, int64_t rows, int64_t dim, float* sumsT) {
    for (int64_t d = 0; d < dim; d += 4) {
        for (int64_t r = 0; r < rows; r += kRowStep) {
            float* s0 = sumsT + d * rows + r;
            float* s1 = s0 + rows;
            float* s2 = s1 + rows;
            float* s3 = s2 + rows;
            __m256 a00 = _mm256_loadu_ps(s0), a01 = _mm256_loadu_ps(s0 + 8), a10 = _mm256_loadu_ps(s1),
                   a11 = _mm256_loadu_ps(s1 + 8), a20 = _mm256_loadu_ps(s2), a21 = _mm256_loadu_ps(s2 + 8),
                   a30 = _mm256_loadu_ps(s3), a31 = _mm256_loadu_ps(s3 + 8);
            const float* v = values + d;
            const float* w = weights + r;
            for (int64_t j = 0; j < count; ++j, v += valueStride, w += rows) {
                const __m256 w0 = _mm256_loadu_ps(w);
                const __m256 w1 = _mm256_loadu_ps(w + 8);
                __m256 x = _mm256_broadcast_ss(v);
                a00 = _mm256_fmadd_ps(x, w0, a00);
                a01 = _mm256_fmadd_ps(x, w1, a01);
                x = _mm256_broadcast_ss(v + 1);
                a10 = _mm256_fmadd_ps(x, w0, a10);
                a11 = _mm256_fmadd_ps(x, w1, a11);
                x = _mm256_broadcast_ss(v + 2);
                a20 = _mm256_fmadd_ps(x, w0, a20);
                a21 = _mm256_fmadd_ps(x, w1, a21);
                x = _mm256_broadcast_ss(v + 3);
                a30 = _mm256_fmadd_ps(x, w0, a30);
                a31 = _mm256_fmadd_ps(x, w1, a31);
            }
            _mm256_storeu_ps(s0, a00);
            _mm256_storeu_ps(s0 + 8, a01);
            _mm256_storeu_ps(s1, a10);
            _mm256_storeu_ps(s1 + 8, a11);
            _mm256_storeu_ps(s2, a20);
            _mm256_storeu_ps(s2 + 8, a21);
            _mm256_storeu_ps(s3, a30);
            _mm256_storeu_ps(s3 + 8, a31);
        }
    }
}

/// The running softmax's step for one tile: scales the scores, takes each row's new maximum, turns the scores into
/// exp(score - maximum), rescales the row's total and sums by exp(old maximum - new maximum), adds the tile's.
KVSCOPE_PREFILL_AVX2 void softmaxTile(float* scores, int64_t count, int64_t rows, float scale, float* maxima,
                                      float* totals, float* alphas, float* sumsT, int64_t dim) {
    const __m256 scaleVector = _mm256_set1_ps(scale);
    const __m256 negativeInfinity = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    bool rescale = false;
    for (int64_t r = 0; r < rows; r += 8) {
        __m256 tileMax = negativeInfinity;
        for (int64_t j = 0; j < count; ++j) {
            const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(scores + j * rows + r), scaleVector);
            _mm256_storeu_ps(scores + j * rows + r, s);
            tileMax = _mm256_max_ps(tileMax, s);
        }
        const __m256 oldMax = _mm256_loadu_ps(maxima + r);
        const __m256 newMax = _mm256_max_ps(oldMax, tileMax);
        // A row with no key seen yet keeps -inf as its maximum and subtracts 0: its weights stay 0, never NaN.
        const __m256 subtracted = _mm256_blendv_ps(newMax, _mm256_setzero_ps(),
                                                   _mm256_cmp_ps(newMax, negativeInfinity, _CMP_EQ_OQ));
        const __m256 alpha = expNonPositive(_mm256_sub_ps(oldMax, subtracted));
        __m256 total = _mm256_mul_ps(_mm256_loadu_ps(totals + r), alpha);
        for (int64_t j = 0; j < count; ++j) {
            const __m256 p = expNonPositive(_mm256_sub_ps(_mm256_loadu_ps(scores + j * rows + r), subtracted));
            _mm256_storeu_ps(scores + j * rows + r, p);
            total = _mm256_add_ps(total, p);
        }
        _mm256_storeu_ps(totals + r, total);
        _mm256_storeu_ps(maxima + r, newMax);
        _mm256_storeu_ps(alphas + r, alpha);
        rescale = rescale || _mm256_movemask_ps(_mm256_cmp_ps(alpha, _mm256_set1_ps(1.0f), _CMP_NEQ_UQ)) != 0;
    }
    if (rescale) {
        for (int64_t d = 0; d < dim; ++d) {
            float* sums = sumsT + d * rows;
            for (int64_t r = 0; r < rows; r += 8) {
                _mm256_storeu_ps(sums + r, _mm256_mul_ps(_mm256_loadu_ps(sums + r), _mm256_loadu_ps(alphas + r)));
            }
        }
    }
}

/// Everything one task reads: the operands' data and strides, the mask's rows and the heads' geometry.
struct Operands {
    const float* query;
    int64_t queryStrides[4];
    const float* keys;
    int64_t keyStrides[3];  // batch, head, key
    const float* values;
    int64_t valueStrides[3];
    const uint8_t* mask;  // [mask batches, T, KV] or nullptr (every key)
    const RowKeys* rowKeys;  // [mask batches, T]
    int64_t maskBatches;
    int64_t length;
    int64_t kvLength;
    int64_t heads;
    int64_t groups;
    int64_t dim;
    float scale;
    float* output;  // [B, T, Hq * D]
};

/// The buffers of one thread's tasks, kept between them.
struct TaskBuffers {
    std::vector<float> queryT;
    std::vector<float> sumsT;
    std::vector<float> scores;
    std::vector<float> maxima;
    std::vector<float> totals;
    std::vector<float> alphas;
};

/// Query rows [first, first + tokens) of every query head of KV head `kvHead` in batch row `b`.
KVSCOPE_PREFILL_AVX2 void attendBlock(const Operands& in, int64_t b, int64_t kvHead, int64_t first, int64_t tokens,
                                      TaskBuffers& buffers) {
    const int64_t dim = in.dim;
    const int64_t rows = in.groups * tokens;  // row g * tokens + i: query head kvHead * groups + g, token first + i
    const int64_t padded = (rows + kRowStep - 1) / kRowStep * kRowStep;
    buffers.queryT.assign(static_cast<size_t>(dim * padded), 0.0f);
    buffers.sumsT.assign(static_cast<size_t>(dim * padded), 0.0f);
    buffers.scores.resize(static_cast<size_t>(kTileKeys * padded));
    buffers.maxima.assign(static_cast<size_t>(padded), -std::numeric_limits<float>::infinity());
    buffers.totals.assign(static_cast<size_t>(padded), 0.0f);
    buffers.alphas.resize(static_cast<size_t>(padded));
    float* queryT = buffers.queryT.data();
    for (int64_t g = 0; g < in.groups; ++g) {
        const int64_t head = kvHead * in.groups + g;
        for (int64_t i = 0; i < tokens; ++i) {
            const float* q = in.query + b * in.queryStrides[0] + head * in.queryStrides[1] +
                             (first + i) * in.queryStrides[2];
            for (int64_t d = 0; d < dim; ++d) {
                queryT[d * padded + g * tokens + i] = q[d * in.queryStrides[3]];
            }
        }
    }
    // The keys some row sees, and those every row sees (no mask to apply there).
    const int64_t maskBatch = in.maskBatches == 1 ? 0 : b;
    const RowKeys* rowKeys = in.rowKeys + maskBatch * in.length + first;
    int64_t lowest = in.kvLength;
    int64_t highest = -1;
    int64_t plainFrom = 0;
    int64_t plainTo = in.kvLength - 1;
    bool contiguous = true;
    for (int64_t i = 0; i < tokens; ++i) {
        lowest = std::min(lowest, rowKeys[i].first);
        highest = std::max(highest, rowKeys[i].last);
        plainFrom = std::max(plainFrom, rowKeys[i].first);
        plainTo = std::min(plainTo, rowKeys[i].last);
        contiguous = contiguous && rowKeys[i].contiguous;
    }
    const float* keys = in.keys + b * in.keyStrides[0] + kvHead * in.keyStrides[1];
    const float* values = in.values + b * in.valueStrides[0] + kvHead * in.valueStrides[1];
    float* scores = buffers.scores.data();
    constexpr float kHidden = -std::numeric_limits<float>::infinity();
    for (int64_t tile = lowest; tile <= highest; tile += kTileKeys) {
        const int64_t count = std::min(kTileKeys, highest + 1 - tile);
        scoreTile(keys + tile * in.keyStrides[2], in.keyStrides[2], count, queryT, padded, dim, scores);
        if (!(contiguous && tile >= plainFrom && tile + count - 1 <= plainTo)) {
            for (int64_t r = 0; r < rows; ++r) {
                const RowKeys& seen = rowKeys[r % tokens];
                const uint8_t* allowed =
                    in.mask == nullptr ? nullptr
                                       : in.mask + (maskBatch * in.length + first + r % tokens) * in.kvLength;
                for (int64_t j = 0; j < count; ++j) {
                    const int64_t key = tile + j;
                    if (key < seen.first || key > seen.last || (!seen.contiguous && allowed[key] == 0)) {
                        scores[j * padded + r] = kHidden;
                    }
                }
            }
        }
        softmaxTile(scores, count, padded, in.scale, buffers.maxima.data(), buffers.totals.data(),
                    buffers.alphas.data(), buffers.sumsT.data(), dim);
        accumulateTile(values + tile * in.valueStrides[2], in.valueStrides[2], count, scores, padded, dim,
                       buffers.sumsT.data());
    }
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t g = r / tokens;
        const int64_t i = r % tokens;
        float* out = in.output + ((b * in.length + first + i) * in.heads + kvHead * in.groups + g) * dim;
        const float total = buffers.totals[static_cast<size_t>(r)];
        for (int64_t d = 0; d < dim; ++d) {
            out[d] = buffers.sumsT[static_cast<size_t>(d * padded + r)] / total;
        }
    }
}

} // namespace
#endif

bool PrefillAttention::applies(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                               const at::Tensor& mask) {
#if KVSCOPE_PREFILL_ATTENTION_X86
    const auto cpuFloat = [](const at::Tensor& t) {
        return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.dim() == 4 && !t.requires_grad();
    };
    if (gguf::BlockType::kernelLevel() == gguf::KernelLevel::Portable || !cpuFloat(query) || !cpuFloat(keys) ||
        !cpuFloat(values)) {
        return false;
    }
    const int64_t dim = query.size(3);
    const bool shapes = keys.size(0) == query.size(0) && values.size(0) == query.size(0) &&
                        keys.size(1) == values.size(1) && keys.size(1) > 0 && query.size(1) % keys.size(1) == 0 &&
                        keys.size(2) == values.size(2) && keys.size(2) > 0 && keys.size(3) == dim &&
                        values.size(3) == dim && dim > 0 && dim % 8 == 0 && keys.stride(3) == 1 &&
                        values.stride(3) == 1;
    const bool maskFits = !mask.defined() ||
                          (mask.device().is_cpu() && mask.scalar_type() == at::kBool && mask.dim() == 4 &&
                           (mask.size(0) == 1 || mask.size(0) == query.size(0)) && mask.size(1) == 1 &&
                           mask.size(2) == query.size(2) && mask.size(3) == keys.size(2));
    return shapes && maskFits;
#else
    (void)query;
    (void)keys;
    (void)values;
    (void)mask;
    return false;
#endif
}

at::Tensor PrefillAttention::attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                                    const at::Tensor& mask, double scale) {
#if KVSCOPE_PREFILL_ATTENTION_X86
    const int64_t batch = query.size(0);
    const int64_t heads = query.size(1);
    const int64_t length = query.size(2);
    const int64_t dim = query.size(3);
    const int64_t kvHeads = keys.size(1);
    const int64_t kvLength = keys.size(2);
    const int64_t maskBatches = mask.defined() ? mask.size(0) : 1;
    std::vector<RowKeys> rowKeys(static_cast<size_t>(maskBatches * length), RowKeys{0, kvLength - 1, true});
    at::Tensor allowed;
    if (mask.defined()) {
        allowed = mask.reshape({maskBatches * length, kvLength}).contiguous();
        const auto* bits = reinterpret_cast<const uint8_t*>(allowed.data_ptr<bool>());
        for (int64_t row = 0; row < maskBatches * length; ++row) {
            const uint8_t* keysSeen = bits + row * kvLength;
            const auto* found = static_cast<const uint8_t*>(std::memchr(keysSeen, 1, static_cast<size_t>(kvLength)));
            if (found == nullptr) {
                return at::Tensor();
            }
            RowKeys& seen = rowKeys[static_cast<size_t>(row)];
            seen.first = found - keysSeen;
            seen.last = kvLength - 1;
            while (keysSeen[seen.last] == 0) {
                --seen.last;
            }
            const int64_t count = std::count(keysSeen + seen.first, keysSeen + seen.last + 1, uint8_t{1});
            seen.contiguous = count == seen.last - seen.first + 1;
        }
    }
    at::Tensor output = at::empty({batch, length, heads * dim}, query.options());
    const int64_t groups = heads / kvHeads;
    const int64_t blockRows = std::clamp<int64_t>(kBlockElements / dim, kRowStep, kMaxBlockRows);
    const int64_t tokensPerBlock = std::max<int64_t>(1, blockRows / groups);
    Operands in{query.data_ptr<float>(),
                {query.stride(0), query.stride(1), query.stride(2), query.stride(3)},
                keys.data_ptr<float>(),
                {keys.stride(0), keys.stride(1), keys.stride(2)},
                values.data_ptr<float>(),
                {values.stride(0), values.stride(1), values.stride(2)},
                allowed.defined() ? reinterpret_cast<const uint8_t*>(allowed.data_ptr<bool>()) : nullptr,
                rowKeys.data(),
                maskBatches,
                length,
                kvLength,
                heads,
                groups,
                dim,
                static_cast<float>(scale),
                output.data_ptr<float>()};
    const int64_t blocks = (length + tokensPerBlock - 1) / tokensPerBlock;
    const int64_t units = batch * kvHeads;
    // The output projection (OpenBLAS's threads) follows: the threads sleep once the blocks are done.
    KernelThreads::shared().parallelFor(
        blocks * units, 1,
        [&](int64_t begin, int64_t end) {
            thread_local TaskBuffers buffers;
            for (int64_t index = begin; index < end; ++index) {
                // The last blocks first: a causal prompt's last rows see the most keys, and the threads end
                // together.
                const int64_t block = blocks - 1 - index / units;
                const int64_t unit = index % units;
                const int64_t first = block * tokensPerBlock;
                attendBlock(in, unit / kvHeads, unit % kvHeads, first, std::min(tokensPerBlock, length - first),
                            buffers);
            }
        },
        0, KernelThreads::After::Sleep);
    return output;
#else
    (void)query;
    (void)keys;
    (void)values;
    (void)mask;
    (void)scale;
    return at::Tensor();
#endif
}

} // namespace kvscope::model::ops
