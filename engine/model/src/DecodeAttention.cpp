// SPDX-License-Identifier: GPL-3.0-or-later
#include "DecodeAttention.h"

#include "KernelThreads.h"
#include "PrefillAttention.h"
#include "VectorExp.h"

#include "kvscope/gguf/BlockType.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define KVSCOPE_DECODE_ATTENTION_X86 1
#define KVSCOPE_DECODE_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace kvscope::model::ops {

#if KVSCOPE_DECODE_ATTENTION_X86
namespace {

/// Keys per scoring task: enough work to outweigh a task's start, enough tasks for every thread.
constexpr int64_t kKeysPerTask = 256;

KVSCOPE_DECODE_AVX2 inline float horizontalSum(__m256 v) {
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

/// q . k over `dim` values (a multiple of 8).
KVSCOPE_DECODE_AVX2 inline float dot(const float* q, const float* k, int64_t dim) {
    __m256 even = _mm256_setzero_ps();
    __m256 odd = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        even = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), even);
        odd = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), odd);
    }
    if (i < dim) {
        even = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), even);
    }
    return horizontalSum(_mm256_add_ps(even, odd));
}

KVSCOPE_DECODE_AVX2 void scoreTask(const float* query, int64_t rows, int64_t dim, const float* keys,
                                   int64_t keyStride, int64_t first, int64_t last, float* scores, int64_t kvLength) {
    for (int64_t j = first; j < last; ++j) {
        const float* key = keys + j * keyStride;
        for (int64_t r = 0; r < rows; ++r) {
            scores[r * kvLength + j] = dot(query + r * dim, key, dim);
        }
    }
}

/// out[r][0..dim) = sum over keys [first, last) of weights[r][j] * values[j]: whole value rows read in order,
/// the sums in `out` (a task's own rows, in the first-level cache).
KVSCOPE_DECODE_AVX2 void outputTask(const float* weights, int64_t rows, int64_t kvLength, const float* values,
                                    int64_t valueStride, int64_t first, int64_t last, float* out, int64_t dim) {
    for (int64_t i = 0; i < rows * dim; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_setzero_ps());
    }
    for (int64_t j = first; j < last; ++j) {
        const float* row = values + j * valueStride;
        for (int64_t r = 0; r < rows; ++r) {
            const __m256 w = _mm256_broadcast_ss(weights + r * kvLength + j);
            float* sums = out + r * dim;
            for (int64_t d = 0; d < dim; d += 16) {
                _mm256_storeu_ps(sums + d, _mm256_fmadd_ps(w, _mm256_loadu_ps(row + d), _mm256_loadu_ps(sums + d)));
                _mm256_storeu_ps(sums + d + 8,
                                 _mm256_fmadd_ps(w, _mm256_loadu_ps(row + d + 8), _mm256_loadu_ps(sums + d + 8)));
            }
        }
    }
}

/// Runs task(head, first, last) for every (batch x head, chunk of kKeysPerTask keys) over the threads: the one
/// split both products share.
template <typename Task>
void forEachKeyChunk(int64_t headCount, int64_t kvLength, const Task& task) {
    const int64_t chunks = (kvLength + kKeysPerTask - 1) / kKeysPerTask;
    KernelThreads::shared().parallelFor(headCount * chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t index = begin; index < end; ++index) {
            const int64_t first = (index % chunks) * kKeysPerTask;
            task(index / chunks, first, std::min(kvLength, first + kKeysPerTask));
        }
    });
}

/// Keys a fused task takes at least (its start and the combine outweigh fewer) and at most (its scores stay in
/// a buffer of the first-level cache).
constexpr int64_t kMinRunKeys = 128;
constexpr int64_t kMaxRunKeys = 256;
/// Fused tasks per thread: a KV head's keys part into runs so that the threads finish together.
constexpr int64_t kRunsPerThread = 8;

/// q . k for one query row against four keys, their sums in lanes 0-3.
KVSCOPE_DECODE_AVX2 inline __m128 dotFour(const float* q, const float* k0, const float* k1, const float* k2,
                                          const float* k3, int64_t dim) {
    __m256 a0 = _mm256_setzero_ps();
    __m256 a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps();
    __m256 a3 = _mm256_setzero_ps();
    for (int64_t d = 0; d < dim; d += 8) {
        const __m256 x = _mm256_loadu_ps(q + d);
        a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + d), a0);
        a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + d), a1);
        a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + d), a2);
        a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + d), a3);
    }
    const __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1));
}

KVSCOPE_DECODE_AVX2 inline float maxOf(__m256 v) {
    const __m128 half = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 quarter = _mm_max_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_max_ss(quarter, _mm_movehdup_ps(quarter)));
}

/// One run of a KV head's keys for attend(): where the operands are and what the run leaves behind.
struct FusedRun {
    const float* query;   // [rows, dim], contiguous
    int64_t rows;
    int64_t dim;
    const float* keys;    // the run's first key; rows keyStride apart
    int64_t keyStride;
    const float* values;  // the run's first value row
    int64_t valueStride;
    const uint8_t* mask;  // [tokens, KV] of this batch row at the run's first key (rows r % tokens), or nullptr
    int64_t tokens;
    int64_t kvLength;
    int64_t count;        // keys in the run
    float scale;
    float* maxima;        // [rows]: the run's largest score per row (-inf where the row sees none of its keys)
    float* totals;        // [rows]: sum of exp(score - maximum)
    float* sums;          // [rows, dim]: sum of exp(score - maximum) * value
};

KVSCOPE_DECODE_AVX2 void attendRun(const FusedRun& run) {
    constexpr float kHidden = -std::numeric_limits<float>::infinity();
    const int64_t stride = (run.count + 7) / 8 * 8;  // a row of scores, padded with -inf to whole vectors
    alignas(32) float scores[DecodeAttention::kMaxRows * kMaxRunKeys];
    const __m128 scale = _mm_set1_ps(run.scale);
    // Four keys at a time against every row: each key comes from memory once and in order.
    int64_t j = 0;
    for (; j + 4 <= run.count; j += 4) {
        const float* k = run.keys + j * run.keyStride;
        for (int64_t r = 0; r < run.rows; ++r) {
            // Eager attention's order: the product, then times the scale (both rounded to float).
            _mm_storeu_ps(scores + r * stride + j,
                          _mm_mul_ps(dotFour(run.query + r * run.dim, k, k + run.keyStride, k + 2 * run.keyStride,
                                             k + 3 * run.keyStride, run.dim),
                                     scale));
        }
    }
    for (; j < run.count; ++j) {
        for (int64_t r = 0; r < run.rows; ++r) {
            scores[r * stride + j] = dot(run.query + r * run.dim, run.keys + j * run.keyStride, run.dim) * run.scale;
        }
    }
    for (int64_t r = 0; r < run.rows; ++r) {
        float* s = scores + r * stride;
        for (j = run.count; j < stride; ++j) {
            s[j] = kHidden;
        }
        if (run.mask != nullptr) {
            const uint8_t* allowed = run.mask + (r % run.tokens) * run.kvLength;
            for (j = 0; j < run.count; ++j) {
                if (allowed[j] == 0) {
                    s[j] = kHidden;
                }
            }
        }
    }
    for (int64_t r = 0; r < run.rows; ++r) {
        float* s = scores + r * stride;
        __m256 largest = _mm256_set1_ps(kHidden);
        for (int64_t j = 0; j < stride; j += 8) {
            largest = _mm256_max_ps(largest, _mm256_load_ps(s + j));
        }
        const float maximum = maxOf(largest);
        run.maxima[r] = maximum;
        // A row that sees none of the run's keys: weights 0 (exp(-inf) is 0), never NaN.
        const __m256 subtracted = _mm256_set1_ps(maximum == kHidden ? 0.0f : maximum);
        __m256 total = _mm256_setzero_ps();
        for (int64_t j = 0; j < stride; j += 8) {
            const __m256 p = expNonPositive(_mm256_sub_ps(_mm256_load_ps(s + j), subtracted));
            _mm256_store_ps(s + j, p);
            total = _mm256_add_ps(total, p);
        }
        run.totals[r] = horizontalSum(total);
    }
    // The weighted values: each value row from memory once and in order, the rows' sums in the first-level cache.
    outputTask(scores, run.rows, stride, run.values, run.valueStride, 0, run.count, run.sums, run.dim);
}

} // namespace
#endif

bool DecodeAttention::applies(const at::Tensor& rows, const at::Tensor& states) {
#if KVSCOPE_DECODE_ATTENTION_X86
    // Processors without AVX2 (or a user's KVSCOPE_GGUF_KERNELS=portable) keep LibTorch's products.
    return gguf::BlockType::kernelLevel() != gguf::KernelLevel::Portable && rows.device().is_cpu() &&
           states.device().is_cpu() && rows.scalar_type() == at::kFloat && states.scalar_type() == at::kFloat &&
           rows.dim() == 4 && states.dim() == 4 && rows.size(2) <= kMaxRows && states.stride(3) == 1 &&
           rows.size(0) == states.size(0) && rows.size(1) == states.size(1) && states.size(3) % 16 == 0 &&
           !rows.requires_grad() && !states.requires_grad();  // a trainer's pass keeps LibTorch's graph
#else
    (void)rows;
    (void)states;
    return false;
#endif
}

at::Tensor DecodeAttention::scores(const at::Tensor& query, const at::Tensor& keys) {
    const at::Tensor q = query.contiguous();
    const int64_t batch = q.size(0);
    const int64_t heads = q.size(1);
    const int64_t rows = q.size(2);
    const int64_t dim = q.size(3);
    const int64_t kvLength = keys.size(2);
#if KVSCOPE_DECODE_ATTENTION_X86
    at::Tensor scores = at::empty({batch, heads, rows, kvLength}, q.options());
    const float* queryData = q.data_ptr<float>();
    const float* keyData = keys.data_ptr<float>();
    float* scoreData = scores.data_ptr<float>();
    forEachKeyChunk(batch * heads, kvLength, [&](int64_t head, int64_t first, int64_t last) {  // head: b * heads + h
        scoreTask(queryData + head * rows * dim, rows, dim,
                  keyData + (head / heads) * keys.stride(0) + (head % heads) * keys.stride(1), keys.stride(2), first,
                  last, scoreData + head * rows * kvLength, kvLength);
    });
    return scores;
#else
    return at::matmul(q, keys.transpose(-1, -2));
#endif
}

at::Tensor DecodeAttention::output(const at::Tensor& weights, const at::Tensor& values) {
    const at::Tensor w = weights.contiguous();
    const int64_t batch = w.size(0);
    const int64_t heads = w.size(1);
    const int64_t rows = w.size(2);
    const int64_t kvLength = w.size(3);
    const int64_t dim = values.size(3);
#if KVSCOPE_DECODE_ATTENTION_X86
    // Each task sums its chunk of keys into its own partial rows; the chunks' partials then add up in order.
    const int64_t chunks = (kvLength + kKeysPerTask - 1) / kKeysPerTask;
    at::Tensor partial = at::empty({batch * heads, chunks, rows, dim}, w.options());
    const float* weightData = w.data_ptr<float>();
    const float* valueData = values.data_ptr<float>();
    float* partialData = partial.data_ptr<float>();
    forEachKeyChunk(batch * heads, kvLength, [&](int64_t head, int64_t first, int64_t last) {
        outputTask(weightData + head * rows * kvLength, rows, kvLength,
                   valueData + (head / heads) * values.stride(0) + (head % heads) * values.stride(1),
                   values.stride(2), first, last, partialData + (head * chunks + first / kKeysPerTask) * rows * dim,
                   dim);
    });
    return (chunks == 1 ? partial : partial.sum(1)).view({batch, heads, rows, dim});
#else
    return at::matmul(w, values);
#endif
}

bool DecodeAttention::fuses(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                            const at::Tensor& mask) {
    // The prompt tiles' operands (CPU float32, whole rows, a boolean mask of their shape, AVX2), in rows the
    // kernels take and whole 16-value column blocks.
    return PrefillAttention::applies(query, keys, values, mask) &&
           query.size(1) / keys.size(1) * query.size(2) <= kMaxRows && query.size(3) % 16 == 0;
}

#if KVSCOPE_DECODE_ATTENTION_X86
namespace {

/// out = sum over runs of exp(maximum - overall) * sums / the same sum of totals, for one row: the runs of
/// attendRun() combined into softmax's result. False where no run saw a key.
KVSCOPE_DECODE_AVX2 bool combineRuns(const float* maxima, const float* totals, const float* sums, int64_t runs,
                                     int64_t rows, int64_t dim, float* out) {
    constexpr float kHidden = -std::numeric_limits<float>::infinity();
    float overall = kHidden;
    for (int64_t c = 0; c < runs; ++c) {
        overall = std::max(overall, maxima[c * rows]);
    }
    if (overall == kHidden) {
        return false;
    }
    for (int64_t d = 0; d < dim; d += 8) {
        _mm256_storeu_ps(out + d, _mm256_setzero_ps());
    }
    float total = 0.0f;
    for (int64_t c = 0; c < runs; ++c) {
        if (maxima[c * rows] == kHidden) {
            continue;
        }
        const float alpha = std::exp(maxima[c * rows] - overall);
        total += alpha * totals[c * rows];
        const __m256 weight = _mm256_set1_ps(alpha);
        const float* run = sums + c * rows * dim;
        for (int64_t d = 0; d < dim; d += 8) {
            _mm256_storeu_ps(out + d, _mm256_fmadd_ps(weight, _mm256_loadu_ps(run + d), _mm256_loadu_ps(out + d)));
        }
    }
    const __m256 divisor = _mm256_set1_ps(total);
    for (int64_t d = 0; d < dim; d += 8) {
        _mm256_storeu_ps(out + d, _mm256_div_ps(_mm256_loadu_ps(out + d), divisor));
    }
    return true;
}

} // namespace
#endif

at::Tensor DecodeAttention::attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                                   const at::Tensor& mask, double scale) {
#if KVSCOPE_DECODE_ATTENTION_X86
    const int64_t batch = query.size(0);
    const int64_t heads = query.size(1);
    const int64_t tokens = query.size(2);
    const int64_t dim = query.size(3);
    const int64_t kvHeads = keys.size(1);
    const int64_t groups = heads / kvHeads;
    const int64_t rows = groups * tokens;
    const int64_t kvLength = keys.size(2);
    // [B, Hkv, groups * T, D]: row g * T + t is query head h * groups + g at token t.
    const at::Tensor grouped = query.reshape({batch, kvHeads, rows, dim}).contiguous();
    const at::Tensor allowed = mask.defined() ? mask.contiguous() : mask;
    const auto* maskData = allowed.defined() ? reinterpret_cast<const uint8_t*>(allowed.data_ptr<bool>()) : nullptr;
    const int64_t maskBatches = allowed.defined() ? allowed.size(0) : 1;

    // Runs of keys per KV head: enough tasks for every thread, each between kMinRunKeys and kMaxRunKeys keys.
    const int64_t headCount = batch * kvHeads;
    const int64_t threads = std::max(1, at::get_num_threads());
    int64_t runs = (kRunsPerThread * threads + headCount - 1) / headCount;
    runs = std::min(runs, (kvLength + kMinRunKeys - 1) / kMinRunKeys);
    runs = std::max({runs, (kvLength + kMaxRunKeys - 1) / kMaxRunKeys, int64_t{1}});
    const int64_t runKeys = (kvLength + runs - 1) / runs;
    runs = (kvLength + runKeys - 1) / runKeys;

    thread_local std::vector<float> maxima;
    thread_local std::vector<float> totals;
    thread_local std::vector<float> sums;
    maxima.resize(static_cast<size_t>(headCount * runs * rows));
    totals.resize(maxima.size());
    sums.resize(maxima.size() * static_cast<size_t>(dim));
    const float* queryData = grouped.data_ptr<float>();
    const float* keyData = keys.data_ptr<float>();
    const float* valueData = values.data_ptr<float>();
    float* maximaData = maxima.data();
    float* totalsData = totals.data();
    float* sumsData = sums.data();
    KernelThreads::shared().parallelFor(headCount * runs, 1, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t head = task / runs;  // b * kvHeads + h
            const int64_t b = head / kvHeads;
            const int64_t h = head % kvHeads;
            const int64_t first = (task % runs) * runKeys;
            FusedRun run{};
            run.query = queryData + head * rows * dim;
            run.rows = rows;
            run.dim = dim;
            run.keys = keyData + b * keys.stride(0) + h * keys.stride(1) + first * keys.stride(2);
            run.keyStride = keys.stride(2);
            run.values = valueData + b * values.stride(0) + h * values.stride(1) + first * values.stride(2);
            run.valueStride = values.stride(2);
            run.mask = maskData == nullptr ? nullptr
                                           : maskData + (maskBatches == 1 ? 0 : b) * tokens * kvLength + first;
            run.tokens = tokens;
            run.kvLength = kvLength;
            run.count = std::min(runKeys, kvLength - first);
            run.scale = static_cast<float>(scale);
            run.maxima = maximaData + task * rows;
            run.totals = totalsData + task * rows;
            run.sums = sumsData + task * rows * dim;
            attendRun(run);
        }
    });
    at::Tensor output = at::empty({batch, tokens, heads * dim}, query.options());
    float* out = output.data_ptr<float>();
    for (int64_t head = 0; head < headCount; ++head) {
        const int64_t b = head / kvHeads;
        const int64_t h = head % kvHeads;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t first = head * runs * rows + r;  // run 0's entry for the row (run c's: c * rows further)
            if (!combineRuns(maximaData + first, totalsData + first, sumsData + first * dim, runs, rows, dim,
                             out + ((b * tokens + r % tokens) * heads + h * groups + r / tokens) * dim)) {
                return at::Tensor();
            }
        }
    }
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
