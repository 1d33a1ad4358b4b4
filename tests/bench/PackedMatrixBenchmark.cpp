// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF model's products on CPU, one thread, SmolLM2-135M's shapes: its MLP's Q4_1 up projection (1536 x 576)
// and its Q8_0 embedding as the output head (49152 x 576). Each kept as the file's blocks (PackedMatrix:
// the block kernels for a decode step's row, widened slices for a prefill's 128) against the same matrix
// widened to float32 at load (LibTorch's product, 4 bytes a weight resident). README.md, "A real model beside
// llama.cpp and Transformers", records the numbers.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/model/PackedMatrix.h"
#include "GgufTestWriter.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

namespace {

using kvscope::model::PackedMatrix;

/// A [rows, cols] matrix of N(0, 0.02) values quantised as `typeName`, kept packed.
PackedMatrix packed(int64_t rows, int64_t cols, const char* typeName) {
    const auto* type = kvscope::gguf::BlockType::find(typeName);
    at::manual_seed(0);
    const at::Tensor values = (at::randn({rows, cols}) * 0.02).contiguous();
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols / type->blockSize() * type->typeSize()));
    type->quantize(values.data_ptr<float>(), data.size() / type->typeSize(), data.data());
    kvscope::testing::GgufTestWriter writer;
    writer.header(3, 1, 0)
        .tensor("w", {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, type->id(), 0)
        .padTo(32)
        .append(data);
    auto file = std::make_shared<const kvscope::gguf::GgufFile>(kvscope::gguf::GgufFile::fromBytes(writer.bytes));
    return PackedMatrix(file, file->tensor("w"));
}

void packedProduct(benchmark::State& state, int64_t rows, int64_t cols, const char* typeName) {
    at::set_num_threads(1);
    const PackedMatrix matrix = packed(rows, cols, typeName);
    const at::Tensor x = at::randn({state.range(0), cols});
    for (auto _ : state) {
        benchmark::DoNotOptimize(matrix.multiply(x));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.counters["weight_MB"] = static_cast<double>(matrix.bytes()) / 1e6;
}

void widenedProduct(benchmark::State& state, int64_t rows, int64_t cols, const char* typeName) {
    at::set_num_threads(1);
    const at::Tensor w = packed(rows, cols, typeName).widened();
    const at::Tensor x = at::randn({state.range(0), cols});
    for (auto _ : state) {
        benchmark::DoNotOptimize(at::linear(x, w));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.counters["weight_MB"] = static_cast<double>(w.numel() * 4) / 1e6;
}

} // namespace

BENCHMARK_CAPTURE(packedProduct, up_q4_1, 1536, 576, "q4_1")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(widenedProduct, up_q4_1, 1536, 576, "q4_1")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(packedProduct, head_q8_0, 49152, 576, "q8_0")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(widenedProduct, head_q8_0, 49152, 576, "q8_0")->Arg(1)->Arg(128);
BENCHMARK_MAIN();
