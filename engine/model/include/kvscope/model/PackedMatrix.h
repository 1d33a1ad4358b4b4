// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kvscope::gguf {
class BlockType;
class GgufFile;
struct GgufTensorInfo;
} // namespace kvscope::gguf

namespace kvscope::model {

/// A weight matrix kept as a GGUF file's quantised blocks (each row a run of blocks along the input dimension),
/// multiplied block by block and never widened whole: a model holds about its file's size.
class PackedMatrix {
public:
    /// Input rows a product takes through the block kernels (BlockType::dotRow); more (a prefill) widen a slice
    /// of weight rows at a time into a LibTorch product.
    static constexpr int64_t kKernelInputRows = 8;

    /// The 2-D tensor `info` of `file` (its mapping kept open by this matrix; not its metadata). Row r of the matrix is the stored row
    /// `rowOrder[r]` (the converter's Q/K permutation, undone), or row r when `rowOrder` is empty.
    PackedMatrix(std::shared_ptr<const gguf::GgufFile> file, const gguf::GgufTensorInfo& info,
                 std::vector<int64_t> rowOrder = {});

    int64_t rows() const { return m_rows; }
    int64_t cols() const { return m_cols; }
    const gguf::BlockType& type() const { return *m_type; }
    /// The stored bytes: what this matrix holds in memory.
    int64_t bytes() const { return m_rowBytes * m_rows; }
    /// The blocks as the file stores them (rows in the file's order) and the order they are read in.
    std::span<const uint8_t> storedBlocks() const { return {m_data, static_cast<size_t>(bytes())}; }
    const std::vector<int64_t>& rowOrder() const { return m_rowOrder; }
    /// `input` [..., cols] times the matrix's transpose: [..., rows], float32 (the values it holds are
    /// exactly the widened ones; only the sums' order is the kernel's).
    at::Tensor multiply(const at::Tensor& input) const;
    /// `input` [..., cols] times several matrices of one width, their rows stacked: [..., sum of rows], each
    /// matrix's product in its own columns, the values its multiply() gives. One pass of the threads for a decode
    /// step's row, one widened LibTorch product for a prefill (the activations packed once, not per matrix).
    static at::Tensor multiplyStacked(const at::Tensor& input, std::span<const PackedMatrix* const> matrices);
    /// The rows `ids` name (any shape), widened: [..., cols] float32 (an embedding lookup).
    at::Tensor gather(const at::Tensor& ids) const;
    /// Rows first .. first + count - 1 widened to float32, as gguf-py dequantises them.
    at::Tensor widenedRows(int64_t first, int64_t count) const;
    at::Tensor widened() const { return widenedRows(0, m_rows); }

private:
    const uint8_t* row(int64_t r) const;
    /// Widens rows [first, first + count) of the matrices stacked into `out` ([count, cols] float32), on the
    /// kernel threads.
    static void widenStacked(std::span<const PackedMatrix* const> matrices, int64_t first, int64_t count, float* out);

    std::shared_ptr<const void> m_mapping;
    const gguf::BlockType* m_type = nullptr;
    const uint8_t* m_data = nullptr;
    int64_t m_rows = 0;
    int64_t m_cols = 0;
    int64_t m_rowBytes = 0;
    int64_t m_blocksPerRow = 0;
    std::vector<int64_t> m_rowOrder;
};

} // namespace kvscope::model
