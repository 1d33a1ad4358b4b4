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
#include <gtest/gtest.h>
#include <limits>

using kvscope::gguf::BlockType;
using kvscope::gguf::GgufFile;
using kvscope::model::PackedMatrix;
using kvscope::model::ParameterStore;

namespace {

constexpr int64_t kRows = 40;
constexpr int64_t kCols = 96;

/// A file holding `values` [kRows, kCols] quantised as `typeName`, as tensor "w".
std::shared_ptr<const GgufFile> fileOf(const at::Tensor& values, const char* typeName) {
    const BlockType* type = BlockType::find(typeName);
    std::vector<uint8_t> data(static_cast<size_t>(kRows * kCols / type->blockSize() * type->typeSize()));
    const at::Tensor contiguous = values.contiguous();
    type->quantize(contiguous.data_ptr<float>(), data.size() / type->typeSize(), data.data());
    kvscope::testing::GgufTestWriter writer;
    writer.header(3, 1, 0).tensor("w", {kCols, kRows}, type->id(), 0).padTo(32).append(data);
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
