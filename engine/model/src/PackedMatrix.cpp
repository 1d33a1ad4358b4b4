// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/PackedMatrix.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTensorInfo.h"
#include "kvscope/gguf/SplitActivation.h"
#include "kvscope/model/ModelError.h"

#include "KernelThreads.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>

namespace kvscope::model {

namespace {

/// Weight elements widened at once for a prefill's product (16 MB of float32), as ops::linear widens 2-byte
/// weights.
constexpr int64_t kWidenedElements = int64_t{1} << 22;
/// Rows a thread takes at a time: enough blocks that a task outweighs its scheduling.
constexpr int64_t kRowsPerTask = 16;

} // namespace

PackedMatrix::PackedMatrix(std::shared_ptr<const gguf::GgufFile> file, const gguf::GgufTensorInfo& info,
                           std::vector<int64_t> rowOrder)
    : m_mapping(file->mapping()), m_rowOrder(std::move(rowOrder)) {
    const std::vector<int64_t> shape = info.shape();
    m_type = gguf::BlockType::find(info.type.id);
    if (shape.size() != 2 || m_type == nullptr) {
        throw ModelError("GGUF tensor `" + info.name + "` of `" + file->name() +
                         "` is no matrix of a type kvscope reads (" + gguf::BlockType::readNames() + ")");
    }
    m_rows = shape[0];
    m_cols = shape[1];
    if (m_cols % m_type->blockSize() != 0) {
        throw ModelError("GGUF tensor `" + info.name + "` has rows of " + std::to_string(m_cols) +
                         " values, not whole blocks of " + std::to_string(m_type->blockSize()));
    }
    m_blocksPerRow = m_cols / m_type->blockSize();
    m_rowBytes = m_blocksPerRow * m_type->typeSize();
    m_data = file->bytes(info).data();
    if (!m_rowOrder.empty() && static_cast<int64_t>(m_rowOrder.size()) != m_rows) {
        throw ModelError("a row order of " + std::to_string(m_rowOrder.size()) + " rows for GGUF tensor `" +
                         info.name + "` of " + std::to_string(m_rows));
    }
}

const uint8_t* PackedMatrix::row(int64_t r) const {
    return m_data + (m_rowOrder.empty() ? r : m_rowOrder[static_cast<size_t>(r)]) * m_rowBytes;
}

at::Tensor PackedMatrix::widenedRows(int64_t first, int64_t count) const {
    at::Tensor out = at::empty({count, m_cols}, at::kFloat);
    float* data = out.data_ptr<float>();
    // OpenBLAS's threads multiply next: these leave the cores to them at once.
    KernelThreads::shared().parallelFor(
        count, kRowsPerTask,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                m_type->dequantize(row(first + r), static_cast<size_t>(m_blocksPerRow), data + r * m_cols);
            }
        },
        0, KernelThreads::After::Sleep);
    return out;
}

at::Tensor PackedMatrix::gather(const at::Tensor& ids) const {
    const at::Tensor flat = ids.reshape({-1}).to(at::kCPU, at::kLong).contiguous();
    const int64_t* index = flat.data_ptr<int64_t>();
    at::Tensor out = at::empty({flat.numel(), m_cols}, at::kFloat);
    for (int64_t i = 0; i < flat.numel(); ++i) {
        if (index[i] < 0 || index[i] >= m_rows) {
            throw ModelError("token id " + std::to_string(index[i]) + " is outside the embedding's " +
                             std::to_string(m_rows) + " rows");
        }
        m_type->dequantize(row(index[i]), static_cast<size_t>(m_blocksPerRow), out.data_ptr<float>() + i * m_cols);
    }
    std::vector<int64_t> shape(ids.sizes().begin(), ids.sizes().end());
    shape.push_back(m_cols);
    return out.reshape(shape).to(ids.device());
}

at::Tensor PackedMatrix::multiply(const at::Tensor& input) const {
    if (input.size(-1) != m_cols) {
        throw ModelError("a product of " + std::to_string(input.size(-1)) + "-wide activations with a packed [" +
                         std::to_string(m_rows) + ", " + std::to_string(m_cols) + "] matrix");
    }
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = m_rows;
    const at::Tensor flat = input.reshape({-1, m_cols}).to(at::kFloat).contiguous();
    const int64_t inputRows = flat.size(0);
    if (inputRows > kKernelInputRows) {
        const int64_t slice = std::max<int64_t>(1, kWidenedElements / m_cols);
        if (slice >= m_rows) {
            // The whole matrix in one slice (every matrix of a small model): the product is the output.
            return at::mm(flat, widenedRows(0, m_rows).t()).reshape(shape);
        }
        at::Tensor output = at::empty({inputRows, m_rows}, at::kFloat);
        for (int64_t first = 0; first < m_rows; first += slice) {
            const int64_t count = std::min(slice, m_rows - first);
            output.narrow(1, first, count).copy_(at::matmul(flat, widenedRows(first, count).t()));
        }
        return output.reshape(shape);
    }
    at::Tensor output = at::empty({inputRows, m_rows}, at::kFloat);
    const float* x = flat.data_ptr<float>();
    float* out = output.data_ptr<float>();
    // The integer kernels where the type has them (the activations split once per product, exact to below
    // float32's rounding), else the float ones.
    thread_local gguf::SplitActivation split;
    const gguf::SplitRow* halves =
        m_type->dotsSplitRows() && split.split(x, static_cast<size_t>(inputRows), static_cast<size_t>(m_cols),
                                               static_cast<size_t>(m_cols))
            ? split.rows()
            : nullptr;
    // One run of rows per thread: each streams its part of the matrix from memory in order.
    const int64_t threads = std::max(1, at::get_num_threads());
    const int64_t grain = std::max(kRowsPerTask, (m_rows + threads - 1) / threads);
    KernelThreads::shared().parallelFor(m_rows, grain, [&](int64_t begin, int64_t end) {
        float sums[kKernelInputRows];
        for (int64_t r = begin; r < end; ++r) {
            if (halves != nullptr) {
                m_type->dotSplitRow(row(r), static_cast<size_t>(m_blocksPerRow), halves,
                                    static_cast<size_t>(inputRows), sums);
            } else {
                m_type->dotRow(row(r), static_cast<size_t>(m_blocksPerRow), x, static_cast<size_t>(inputRows),
                               static_cast<size_t>(m_cols), sums);
            }
            for (int64_t t = 0; t < inputRows; ++t) {
                out[t * m_rows + r] = sums[t];
            }
        }
    });
    return output.reshape(shape);
}

} // namespace kvscope::model
