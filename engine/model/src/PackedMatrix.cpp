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

/// Calls visit(matrix, its row, stacked row) for stacked rows [begin, end) of `matrices`, their rows one after
/// another.
template <typename Visit>
void forStackedRows(std::span<const PackedMatrix* const> matrices, int64_t begin, int64_t end, const Visit& visit) {
    size_t m = 0;
    int64_t base = 0;  // the stacked row of matrices[m]'s first row
    for (int64_t r = begin; r < end; ++r) {
        while (r - base >= matrices[m]->rows()) {
            base += matrices[m]->rows();
            ++m;
        }
        visit(*matrices[m], r - base, r);
    }
}

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

void PackedMatrix::widenStacked(std::span<const PackedMatrix* const> matrices, int64_t first, int64_t count,
                                float* out) {
    const int64_t cols = matrices.front()->m_cols;
    // OpenBLAS's threads multiply next: these leave the cores to them at once.
    KernelThreads::shared().parallelFor(
        count, kRowsPerTask,
        [&](int64_t begin, int64_t end) {
            forStackedRows(matrices, first + begin, first + end,
                           [&](const PackedMatrix& matrix, int64_t row, int64_t stacked) {
                               matrix.m_type->dequantize(matrix.row(row), static_cast<size_t>(matrix.m_blocksPerRow),
                                                         out + (stacked - first) * cols);
                           });
        },
        0, KernelThreads::After::Sleep);
}

at::Tensor PackedMatrix::widenedRows(int64_t first, int64_t count) const {
    at::Tensor out = at::empty({count, m_cols}, at::kFloat);
    const PackedMatrix* self = this;
    widenStacked({&self, 1}, first, count, out.data_ptr<float>());
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
    const PackedMatrix* self = this;
    return multiplyStacked(input, {&self, 1});
}

at::Tensor PackedMatrix::multiplyStacked(const at::Tensor& input, std::span<const PackedMatrix* const> matrices) {
    if (matrices.empty()) {
        throw ModelError("a stacked product of no matrices");
    }
    const int64_t cols = matrices.front()->m_cols;
    int64_t rows = 0;
    bool anySplit = false;
    for (const PackedMatrix* matrix : matrices) {
        if (matrix->m_cols != cols) {
            throw ModelError("a stacked product of packed matrices of " + std::to_string(cols) + " and " +
                             std::to_string(matrix->m_cols) + " columns");
        }
        rows += matrix->m_rows;
        anySplit = anySplit || matrix->m_type->dotsSplitRows();
    }
    if (input.size(-1) != cols) {
        throw ModelError("a product of " + std::to_string(input.size(-1)) + "-wide activations with a packed [" +
                         std::to_string(rows) + ", " + std::to_string(cols) + "] matrix");
    }
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = rows;
    const at::Tensor flat = input.reshape({-1, cols}).to(at::kFloat).contiguous();
    const int64_t inputRows = flat.size(0);
    const auto widened = [&](int64_t first, int64_t count) {
        at::Tensor weights = at::empty({count, cols}, at::kFloat);
        widenStacked(matrices, first, count, weights.data_ptr<float>());
        return weights;
    };
    if (inputRows > kKernelInputRows) {
        const int64_t slice = std::max<int64_t>(1, kWidenedElements / cols);
        if (slice >= rows) {
            // The whole stack in one slice (every matrix of a small model): the product is the output.
            return at::mm(flat, widened(0, rows).t()).reshape(shape);
        }
        at::Tensor output = at::empty({inputRows, rows}, at::kFloat);
        for (int64_t first = 0; first < rows; first += slice) {
            const int64_t count = std::min(slice, rows - first);
            output.narrow(1, first, count).copy_(at::matmul(flat, widened(first, count).t()));
        }
        return output.reshape(shape);
    }
    at::Tensor output = at::empty({inputRows, rows}, at::kFloat);
    const float* x = flat.data_ptr<float>();
    float* out = output.data_ptr<float>();
    // The integer kernels where the type has them (the activations split once per product, exact to below
    // float32's rounding), else the float ones.
    thread_local gguf::SplitActivation split;
    const gguf::SplitRow* halves =
        anySplit && split.split(x, static_cast<size_t>(inputRows), static_cast<size_t>(cols), static_cast<size_t>(cols))
            ? split.rows()
            : nullptr;
    // One run of rows per thread: each streams its part of the stack from memory in order.
    const int64_t threads = std::max(1, at::get_num_threads());
    const int64_t grain = std::max(kRowsPerTask, (rows + threads - 1) / threads);
    KernelThreads::shared().parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
        float sums[kKernelInputRows];
        forStackedRows(matrices, begin, end, [&](const PackedMatrix& matrix, int64_t row, int64_t stacked) {
            if (halves != nullptr && matrix.m_type->dotsSplitRows()) {
                matrix.m_type->dotSplitRow(matrix.row(row), static_cast<size_t>(matrix.m_blocksPerRow), halves,
                                           static_cast<size_t>(inputRows), sums);
            } else {
                matrix.m_type->dotRow(matrix.row(row), static_cast<size_t>(matrix.m_blocksPerRow), x,
                                      static_cast<size_t>(inputRows), static_cast<size_t>(cols), sums);
            }
            for (int64_t t = 0; t < inputRows; ++t) {
                out[t * rows + stacked] = sums[t];
            }
        });
    });
    return output.reshape(shape);
}

} // namespace kvscope::model
