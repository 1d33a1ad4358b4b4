// SPDX-License-Identifier: GPL-3.0-or-later
// PackedMatrix: a GGUF matrix kept as its blocks. Widened, it is exactly what the file dequantises to (rows in
// the order asked); its products, through the block kernels (up to kKernelInputRows input rows) and through
// widened slices (more), equal LibTorch's product with the widened matrix up to the order of the sums; its
// rows gathered are the widened rows; and a ParameterStore holding it multiplies through it.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/PackedMatrix.h"
#include "kvscope/model/ParameterStore.h"
#include "GgufTestWriter.h"
#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <limits>

using kvscope::gguf::BlockType;
using kvscope::gguf::GgufFile;
using kvscope::model::PackedMatrix;
using kvscope::model::ParameterStore;

namespace {

constexpr int64_t kRows = 40;
constexpr int64_t kCols = 96;

/// A file holding `values` [rows, cols] (kRows x kCols unless said) quantised as `typeName`, as tensor "w".
std::shared_ptr<const GgufFile> fileOf(const at::Tensor& values, const char* typeName) {
    const BlockType* type = BlockType::find(typeName);
    const auto rows = static_cast<uint64_t>(values.size(0));
    const auto cols = static_cast<uint64_t>(values.size(1));
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols / type->blockSize() * type->typeSize()));
    const at::Tensor contiguous = values.contiguous();
    type->quantize(contiguous.data_ptr<float>(), data.size() / type->typeSize(), data.data());
    kvscope::testing::GgufTestWriter writer;
    writer.header(3, 1, 0).tensor("w", {cols, rows}, type->id(), 0).padTo(32).append(data);
    return std::make_shared<const GgufFile>(GgufFile::fromBytes(writer.bytes, "packed.gguf"));
}

at::Tensor fileValues(const GgufFile& file) {
    const std::vector<float> values = file.dequantize("w");
    return at::tensor(values, at::kFloat).reshape({kRows, kCols});
}

std::vector<int64_t> reversedRows() {
    std::vector<int64_t> order;
    for (int64_t r = kRows - 1; r >= 0; --r) {
        order.push_back(r);
    }
    return order;
}

/// Whether `got` is input x widened^T as float sums can give it: a sum of kCols products, in any order, is within
/// kCols * epsilon of the sum of their magnitudes (Higham's bound). BLAS libraries order sums differently
/// (OpenBLAS, MKL), the block kernels differently again.
bool withinFloatSumBound(const at::Tensor& got, const at::Tensor& input, const at::Tensor& widened) {
    const at::Tensor expected = at::matmul(input.to(at::kDouble), widened.t().to(at::kDouble));
    const at::Tensor magnitude = at::matmul(input.abs().to(at::kDouble), widened.abs().t().to(at::kDouble));
    const at::Tensor bound = magnitude * (kCols * std::numeric_limits<float>::epsilon());
    return (got.to(at::kDouble) - expected).abs().le(bound).all().item<bool>();
}

} // namespace

TEST(PackedMatrixTest, WidensToTheFilesValuesInTheRowOrderAsked) {
    at::manual_seed(1);
    const auto file = fileOf(at::randn({kRows, kCols}), "q4_1");
    const at::Tensor stored = fileValues(*file);
    const PackedMatrix plain(file, file->tensor("w"));
    EXPECT_EQ(plain.rows(), kRows);
    EXPECT_EQ(plain.cols(), kCols);
    EXPECT_EQ(plain.bytes(), kRows * kCols / 32 * 20);
    EXPECT_TRUE(at::equal(plain.widened(), stored));
    const PackedMatrix reversed(file, file->tensor("w"), reversedRows());
    EXPECT_TRUE(at::equal(reversed.widened(), stored.flip(0)));
    EXPECT_TRUE(at::equal(reversed.widenedRows(3, 5), stored.flip(0).narrow(0, 3, 5)));
    EXPECT_THROW(PackedMatrix(file, file->tensor("w"), {0, 1}), kvscope::model::ModelError);
}

TEST(PackedMatrixTest, KeepsTheFilesBytesButNotItsMetadata) {
    // A loaded model's matrices hold the mapping only: the parsed file (a vocabulary's token strings) goes.
    at::manual_seed(4);
    auto file = fileOf(at::randn({kRows, kCols}), "q4_1");
    const at::Tensor stored = fileValues(*file);
    const PackedMatrix matrix(file, file->tensor("w"));
    const std::weak_ptr<const GgufFile> parsed = file;
    file.reset();
    EXPECT_TRUE(parsed.expired());
    EXPECT_TRUE(at::equal(matrix.widened(), stored));
}

TEST(PackedMatrixTest, ProductsEqualTheWidenedMatrixsProduct) {
    at::manual_seed(2);
    for (const char* typeName : {"q8_0", "q4_0", "q4_1", "q5_1"}) {
        SCOPED_TRACE(typeName);
        const auto file = fileOf(at::randn({kRows, kCols}), typeName);
        const PackedMatrix matrix(file, file->tensor("w"), reversedRows());
        const at::Tensor widened = matrix.widened();
        // 1 to 8 input rows take the block kernels; 9 and 20 the widened slices. Batched like a model's [B, T, H].
        for (const int64_t rows : {int64_t{1}, int64_t{3}, PackedMatrix::kKernelInputRows,
                                   PackedMatrix::kKernelInputRows + 1, int64_t{20}}) {
            const at::Tensor input = at::randn({1, rows, kCols});
            const at::Tensor got = matrix.multiply(input);
            ASSERT_EQ(got.sizes(), at::IntArrayRef({1, rows, kRows}));
            const at::Tensor expected = at::matmul(input.to(at::kDouble), widened.t().to(at::kDouble));
            EXPECT_TRUE(withinFloatSumBound(got, input, widened))
                << rows << " rows: largest error " << kvscope::testing::maxAbsDifference(got.to(at::kDouble), expected);
        }
    }
}

TEST(PackedMatrixTest, AStackedProductIsEachMatrixsProductSideBySide) {
    // Three types (q4_1 and q8_0 with integer kernels, q5_1 with float ones only) of 40, 24 and 56 rows: on two
    // threads the halves of the 120 stacked rows part inside the second matrix. The block kernels give each
    // matrix's own product bit for bit; the widened product (a prompt's rows) the same values up to the sums'
    // order.
    at::manual_seed(5);
    const int previousThreads = at::get_num_threads();
    at::set_num_threads(2);
    std::vector<PackedMatrix> matrices;
    const std::vector<std::pair<int64_t, const char*>> parts{{40, "q4_1"}, {24, "q5_1"}, {56, "q8_0"}};
    for (const auto& [rows, typeName] : parts) {
        const auto file = fileOf(at::randn({rows, kCols}), typeName);
        matrices.emplace_back(file, file->tensor("w"), rows == 40 ? reversedRows() : std::vector<int64_t>{});
    }
    const std::vector<const PackedMatrix*> stack{&matrices[0], &matrices[1], &matrices[2]};
    for (const int64_t rows : {int64_t{1}, int64_t{3}, PackedMatrix::kKernelInputRows, int64_t{20}}) {
        SCOPED_TRACE(rows);
        const at::Tensor input = at::randn({1, rows, kCols});
        const at::Tensor stacked = PackedMatrix::multiplyStacked(input, stack);
        ASSERT_EQ(stacked.sizes(), at::IntArrayRef({1, rows, 120}));
        int64_t first = 0;
        for (const PackedMatrix& matrix : matrices) {
            const at::Tensor part = stacked.narrow(-1, first, matrix.rows());
            if (rows <= PackedMatrix::kKernelInputRows) {
                EXPECT_TRUE(at::equal(part, matrix.multiply(input))) << "rows from " << first;
            } else {
                EXPECT_TRUE(withinFloatSumBound(part, input, matrix.widened())) << "rows from " << first;
            }
            first += matrix.rows();
        }
    }
    at::set_num_threads(previousThreads);
    const auto narrow = fileOf(at::randn({kRows, 64}), "q8_0");
    const PackedMatrix other(narrow, narrow->tensor("w"));
    const std::vector<const PackedMatrix*> mixed{&matrices[0], &other};
    EXPECT_THROW(PackedMatrix::multiplyStacked(at::randn({1, kCols}), mixed), kvscope::model::ModelError);
    EXPECT_THROW(PackedMatrix::multiplyStacked(at::randn({1, kCols}), {}), kvscope::model::ModelError);
}

TEST(PackedMatrixTest, AStoreStacksThePackedProductsOfOneInput) {
    at::manual_seed(6);
    ParameterStore store;
    for (const char* name : {"q", "k"}) {
        const auto file = fileOf(at::randn({kRows, kCols}), "q4_0");
        store.setPacked(name, PackedMatrix(file, file->tensor("w")));
    }
    store.set("plain", at::randn({kRows, kCols}));
    const at::Tensor bias = at::randn({kRows});
    const at::Tensor input = at::randn({1, 2, kCols});
    // Packed: one stacked product, viewed; the bias where one is given.
    const std::vector<at::Tensor> both = store.linearStacked(input, {"q", "k"}, {at::Tensor(), bias});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_TRUE(at::equal(both[0], store.linear(input, "q")));
    EXPECT_TRUE(at::equal(both[1], store.linear(input, "k", bias)));
    // A weight kept as a tensor: each product on its own, as linear() gives it.
    const std::vector<at::Tensor> separate = store.linearStacked(input, {"q", "plain"});
    ASSERT_EQ(separate.size(), 2u);
    EXPECT_TRUE(at::equal(separate[0], store.linear(input, "q")));
    EXPECT_TRUE(at::equal(separate[1], store.linear(input, "plain")));
}

TEST(PackedMatrixTest, GathersWidenedRowsAndRefusesIdsOutsideIt) {
    at::manual_seed(3);
    const auto file = fileOf(at::randn({kRows, kCols}), "q8_0");
    const PackedMatrix matrix(file, file->tensor("w"));
    const at::Tensor ids = at::tensor({0, 39, 7, 7}, at::kLong).reshape({2, 2});
    const at::Tensor rows = matrix.gather(ids);
    ASSERT_EQ(rows.sizes(), at::IntArrayRef({2, 2, kCols}));
    EXPECT_TRUE(at::equal(rows, matrix.widened().index_select(0, ids.reshape({-1})).reshape({2, 2, kCols})));
    EXPECT_THROW(matrix.gather(at::tensor({40}, at::kLong)), kvscope::model::ModelError);
    EXPECT_THROW(matrix.multiply(at::randn({1, kCols + 1})), kvscope::model::ModelError);
}

TEST(PackedMatrixTest, AStoreMultipliesThroughItsPackedMatrices) {
    at::manual_seed(4);
    const auto file = fileOf(at::randn({kRows, kCols}), "q4_0");
    ParameterStore store;
    store.setPacked("w", PackedMatrix(file, file->tensor("w")));
    store.set("bias", at::randn({kRows}));
    EXPECT_TRUE(store.contains("w"));
    EXPECT_NE(store.packed("w"), nullptr);
    EXPECT_EQ(store.packed("bias"), nullptr);
    EXPECT_EQ(store.parameterCount(), kRows * kCols + kRows);
    EXPECT_EQ(store.bytes(), kRows * kCols / 32 * 18 + kRows * 4);
    const at::Tensor widened = store.get("w");
    EXPECT_TRUE(at::equal(widened, fileValues(*file)));
    const at::Tensor input = at::randn({2, kCols});
    EXPECT_TRUE(withinFloatSumBound(store.linear(input, "w", store.get("bias")) - store.get("bias"), input, widened));
    EXPECT_TRUE(at::equal(store.embed("w", at::tensor({5}, at::kLong)), widened.narrow(0, 5, 1)));
    // On the CPU it stays packed; rounded through bf16 it is widened first.
    EXPECT_NE(store.to(at::kCPU).packed("w"), nullptr);
    const ParameterStore rounded = store.roundedThrough(at::kBFloat16);
    EXPECT_EQ(rounded.packed("w"), nullptr);
    EXPECT_TRUE(at::equal(rounded.get("w"), widened.to(at::kBFloat16).to(at::kFloat)));
}
