// SPDX-License-Identifier: GPL-3.0-or-later
#include "DecodeAttention.h"

#include "KernelThreads.h"

#include "kvscope/gguf/BlockType.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

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

} // namespace kvscope::model::ops
