// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF model's products on CPU, one thread, SmolLM2-135M's shapes: its MLP's Q4_1 up projection (1536 x 576)
// and its Q8_0 embedding as the output head (49152 x 576). Each kept as the file's blocks (PackedMatrix:
// the block kernels for a decode step's row, widened slices for a prefill's 128) against the same matrix
// widened to float32 at load (LibTorch's product, 4 bytes a weight resident). Then every block type at Gemma 3
// 270M's MLP down projection (640 x 2048), one decode row, with each kernel level the processor runs
// (BlockType::useKernelLevel: "portable" is what a processor without AVX2 gets), and the float kernel beside the
// integer one for the types that have both. Then a layer's products of one input (Gemma 3's q, k and v; its gate
// and up), two threads, stacked into one product against one product each. README.md, "Real models beside llama.cpp and Transformers", records
// the numbers.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/SplitActivation.h"
#include "kvscope/model/PackedMatrix.h"
#include "GgufTestWriter.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <random>
#include <string>

namespace {

using kvscope::model::PackedMatrix;

/// A [rows, cols] matrix of `type` whose blocks are `data`, in a GGUF file of its own.
PackedMatrix fromBlocks(int64_t rows, int64_t cols, const kvscope::gguf::BlockType& type, const std::vector<uint8_t>& data) {
    kvscope::testing::GgufTestWriter writer;
    writer.header(3, 1, 0)
        .tensor("w", {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, type.id(), 0)
        .padTo(32)
        .append(data);
    auto file = std::make_shared<const kvscope::gguf::GgufFile>(kvscope::gguf::GgufFile::fromBytes(writer.bytes));
    return PackedMatrix(file, file->tensor("w"));
}

/// A [rows, cols] matrix of N(0, 0.02) values quantised as `typeName`, kept packed.
PackedMatrix packed(int64_t rows, int64_t cols, const char* typeName) {
    const auto* type = kvscope::gguf::BlockType::find(typeName);
    at::manual_seed(0);
    const at::Tensor values = (at::randn({rows, cols}) * 0.02).contiguous();
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols / type->blockSize() * type->typeSize()));
    type->quantize(values.data_ptr<float>(), data.size() / type->typeSize(), data.data());
    return fromBlocks(rows, cols, *type, data);
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

/// A [rows, cols] matrix of `typeName` from bytes masked to 0x3b: every fp16 scale finite and below 1, so the
/// kernels run on ordinary numbers (the types without a quantiser in kvscope, K-quants among them, included).
std::vector<uint8_t> maskedBlockBytes(int64_t rows, int64_t cols, const kvscope::gguf::BlockType& type) {
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols / type.blockSize() * type.typeSize()));
    std::mt19937 random(7);
    for (uint8_t& byte : data) {
        byte = static_cast<uint8_t>(random() & 0x3b);
    }
    return data;
}

PackedMatrix maskedBytes(int64_t rows, int64_t cols, const char* typeName) {
    const auto* type = kvscope::gguf::BlockType::find(typeName);
    return fromBlocks(rows, cols, *type, maskedBlockBytes(rows, cols, *type));
}

/// Uses kernel level `level` for the run (useKernelLevel); false, the run skipped, where this processor does not
/// run it.
bool useLevel(benchmark::State& state, kvscope::gguf::KernelLevel level) {
    if (kvscope::gguf::BlockType::useKernelLevel(level) != level) {
        state.SkipWithError("this processor does not run that kernel level");
        return false;
    }
    return true;
}

/// Back to the level this processor runs, after a run at another.
void restoreLevel() {
    kvscope::gguf::BlockType::useKernelLevel(kvscope::gguf::BlockType::supportedKernelLevel());
}

void kernelProduct(benchmark::State& state, const char* typeName) {
    at::set_num_threads(1);
    const auto level = static_cast<kvscope::gguf::KernelLevel>(state.range(0));
    if (!useLevel(state, level)) {
        return;
    }
    state.SetLabel(kvscope::gguf::BlockType::kernelLevelName(level));
    const PackedMatrix matrix = maskedBytes(640, 2048, typeName);
    const at::Tensor x = at::randn({1, 2048});
    for (auto _ : state) {
        benchmark::DoNotOptimize(matrix.multiply(x));
    }
    restoreLevel();
    state.SetBytesProcessed(state.iterations() * matrix.bytes());
}

/// One decode row against the same 640 x 2048 matrix through each kernel a type has at the AVX2 and AVX-512
/// levels (the second argument, 1 or 2): the float kernel (BlockType::dotRow, first argument 0) and, where the
/// type has one, the integer kernel against the row split into 16-bit halves (BlockType::dotSplitRow, first
/// argument 1; the split itself included, once per product as PackedMatrix does).
void rowKernels(benchmark::State& state, const char* typeName) {
    const auto* type = kvscope::gguf::BlockType::find(typeName);
    const bool integer = state.range(0) == 1;
    const auto level = static_cast<kvscope::gguf::KernelLevel>(state.range(1));
    if (!useLevel(state, level)) {
        return;
    }
    if (integer && !type->dotsSplitRows()) {
        restoreLevel();
        state.SkipWithError("no integer kernel for this type");
        return;
    }
    state.SetLabel(std::string(integer ? "integer (split rows), " : "float, ") +
                   kvscope::gguf::BlockType::kernelLevelName(level));
    constexpr int64_t rows = 640;
    constexpr int64_t cols = 2048;
    const int64_t blocks = cols / type->blockSize();
    const std::vector<uint8_t> data = maskedBlockBytes(rows, cols, *type);
    std::mt19937 random(11);
    std::vector<float> x(cols);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) {
        v = normal(random);
    }
    std::vector<float> out(rows);
    kvscope::gguf::SplitActivation halves;
    for (auto _ : state) {
        if (integer) {
            halves.split(x.data(), 1, cols, cols);
        }
        for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* row = data.data() + r * blocks * type->typeSize();
            if (integer) {
                type->dotSplitRow(row, static_cast<size_t>(blocks), halves.rows(), 1, &out[static_cast<size_t>(r)]);
            } else {
                type->dotRow(row, static_cast<size_t>(blocks), x.data(), 1, cols, &out[static_cast<size_t>(r)]);
            }
        }
        benchmark::DoNotOptimize(out.data());
    }
    restoreLevel();
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}

/// Gemma 3 270M's products of one input, Q5_0 as its Q4_K_M file keeps 640-wide rows, on two threads: the second
/// argument 0 for q, k and v (1024, 256 and 256 rows), 1 for the MLP's gate and up (2048 each); the third 1 for
/// one stacked product (PackedMatrix::multiplyStacked), 0 for one product per matrix. First argument: input rows
/// (1, a decode step; 512, a prompt).
void layerProducts(benchmark::State& state) {
    at::set_num_threads(2);
    const bool mlp = state.range(1) == 1;
    const bool stacked = state.range(2) == 1;
    std::vector<PackedMatrix> matrices;
    for (int64_t rows : mlp ? std::vector<int64_t>{2048, 2048} : std::vector<int64_t>{1024, 256, 256}) {
        matrices.push_back(maskedBytes(rows, 640, "q5_0"));
    }
    std::vector<const PackedMatrix*> stack;
    for (const PackedMatrix& matrix : matrices) {
        stack.push_back(&matrix);
    }
    state.SetLabel(std::string(mlp ? "gate, up" : "q, k, v") + (stacked ? ": stacked" : ": one product each"));
    const at::Tensor x = at::randn({state.range(0), 640});
    for (auto _ : state) {
        if (stacked) {
            benchmark::DoNotOptimize(PackedMatrix::multiplyStacked(x, stack));
        } else {
            for (const PackedMatrix& matrix : matrices) {
                benchmark::DoNotOptimize(matrix.multiply(x));
            }
        }
    }
    at::set_num_threads(1);
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

} // namespace

BENCHMARK(layerProducts)->ArgsProduct({{1, 512}, {0, 1}, {0, 1}})->UseRealTime();

#define KVSCOPE_ROW_KERNELS(type) BENCHMARK_CAPTURE(rowKernels, type, #type)->ArgsProduct({{0, 1}, {1, 2}})
KVSCOPE_ROW_KERNELS(q8_0);
KVSCOPE_ROW_KERNELS(q4_1);
KVSCOPE_ROW_KERNELS(q5_0);
KVSCOPE_ROW_KERNELS(q4_k);
KVSCOPE_ROW_KERNELS(q6_k);

#define KVSCOPE_KERNEL_BENCHMARK(type) BENCHMARK_CAPTURE(kernelProduct, type, #type)->Arg(0)->Arg(1)->Arg(2)
KVSCOPE_KERNEL_BENCHMARK(q8_0);
KVSCOPE_KERNEL_BENCHMARK(q4_0);
KVSCOPE_KERNEL_BENCHMARK(q4_1);
KVSCOPE_KERNEL_BENCHMARK(q5_0);
KVSCOPE_KERNEL_BENCHMARK(q5_1);
KVSCOPE_KERNEL_BENCHMARK(iq4_nl);
KVSCOPE_KERNEL_BENCHMARK(q2_k);
KVSCOPE_KERNEL_BENCHMARK(q3_k);
KVSCOPE_KERNEL_BENCHMARK(q4_k);
KVSCOPE_KERNEL_BENCHMARK(q5_k);
KVSCOPE_KERNEL_BENCHMARK(q6_k);
KVSCOPE_KERNEL_BENCHMARK(iq4_xs);

BENCHMARK_CAPTURE(packedProduct, up_q4_1, 1536, 576, "q4_1")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(widenedProduct, up_q4_1, 1536, 576, "q4_1")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(packedProduct, head_q8_0, 49152, 576, "q8_0")->Arg(1)->Arg(128);
BENCHMARK_CAPTURE(widenedProduct, head_q8_0, 49152, 576, "q8_0")->Arg(1)->Arg(128);
BENCHMARK_MAIN();
