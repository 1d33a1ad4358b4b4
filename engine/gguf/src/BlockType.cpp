// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/BlockType.h"

#include "kvscope/gguf/GgufError.h"
#include "RowDot.h"

#include <algorithm>
#include <array>
#include <cctype>

#define KVSCOPE_BLOCK_TYPE(Name) const ::kvscope::gguf::BlockType& kvscopeBlockType_##Name();
#include "BlockTypeList.h"
#undef KVSCOPE_BLOCK_TYPE

namespace kvscope::gguf {

namespace {

constexpr uint32_t QK_K = 256;

// Every type ggml defines (gguf-py's GGML_QUANT_SIZES), read or not: a file's layout is checked with these.
constexpr std::array<GgmlTypeTraits, 34> ggmlTypes = {{
    {0, "F32", 1, 4},
    {1, "F16", 1, 2},
    {2, "Q4_0", 32, 2 + 16},
    {3, "Q4_1", 32, 2 + 2 + 16},
    {6, "Q5_0", 32, 2 + 4 + 16},
    {7, "Q5_1", 32, 2 + 2 + 4 + 16},
    {8, "Q8_0", 32, 2 + 32},
    {9, "Q8_1", 32, 4 + 4 + 32},
    {10, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4},
    {11, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12},
    {12, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12},
    {13, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12},
    {14, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16},
    {15, "Q8_K", QK_K, 4 + QK_K + QK_K / 8},
    {16, "IQ2_XXS", QK_K, 2 + QK_K / 4},
    {17, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32},
    {18, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8},
    {19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16},
    {20, "IQ4_NL", 32, 2 + 16},
    {21, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4},
    {22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16},
    {23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64},
    {24, "I8", 1, 1},
    {25, "I16", 1, 2},
    {26, "I32", 1, 4},
    {27, "I64", 1, 8},
    {28, "F64", 1, 8},
    {29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32},
    {30, "BF16", 1, 2},
    {34, "TQ1_0", QK_K, 2 + 4 * 13},
    {35, "TQ2_0", QK_K, 2 + 64},
    {39, "MXFP4", 32, 1 + 16},
    {40, "NVFP4", 64, 4 + 32},
    {41, "Q1_0", 128, 2 + 16},
}};

std::string upper(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
    return text;
}

} // namespace

void BlockType::quantize(const float*, size_t, uint8_t*) const {
    throw GgufError(std::string("kvscope has no quantiser for ggml type ") + name() +
                    "; it quantises F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (llama.cpp's cache types)");
}

void BlockType::dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount,
                       size_t inputStride, float* out) const {
    const size_t width = blockCount * blockSize();
    thread_local std::vector<float> row;
    row.resize(width);
    dequantize(blocks, blockCount, row.data());
    for (size_t t = 0; t < inputCount; ++t) {
        out[t] = rowdot::dot(row.data(), inputs + t * inputStride, width);
    }
}

void BlockType::dotSplitRow(const uint8_t*, size_t, const SplitRow*, size_t, float*) const {
    throw GgufError(std::string("no split-row kernel for ") + name() + " at this kernel level (check dotsSplitRows())");
}

const std::vector<const BlockType*>& BlockType::all() {
    static const std::vector<const BlockType*> types = [] {
        std::vector<const BlockType*> list = {
#define KVSCOPE_BLOCK_TYPE(Name) &kvscopeBlockType_##Name(),
#include "BlockTypeList.h"
#undef KVSCOPE_BLOCK_TYPE
        };
        std::sort(list.begin(), list.end(), [](const BlockType* a, const BlockType* b) { return a->id() < b->id(); });
        return list;
    }();
    return types;
}

const BlockType* BlockType::find(uint32_t id) {
    for (const BlockType* type : all()) {
        if (type->id() == id) {
            return type;
        }
    }
    return nullptr;
}

const BlockType* BlockType::find(const std::string& name) {
    const std::string wanted = upper(name);
    for (const BlockType* type : all()) {
        if (wanted == type->name()) {
            return type;
        }
    }
    return nullptr;
}

std::string BlockType::readNames() {
    std::string names;
    for (const BlockType* type : all()) {
        names += (names.empty() ? "" : ", ") + std::string(type->name());
    }
    return names;
}

const GgmlTypeTraits* BlockType::ggmlType(uint32_t id) {
    for (const GgmlTypeTraits& traits : ggmlTypes) {
        if (traits.id == id) {
            return &traits;
        }
    }
    return nullptr;
}

} // namespace kvscope::gguf
