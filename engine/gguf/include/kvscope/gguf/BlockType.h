// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::gguf {

/// A ggml tensor type's geometry: `blockSize` values stored in `typeSize` bytes. Every type ggml defines has
/// one, whether or not kvscope dequantises it, so that any GGUF file's layout can be checked.
struct GgmlTypeTraits {
    uint32_t id = 0;
    const char* name = "";
    uint32_t blockSize = 1;
    uint32_t typeSize = 0;
};

/// One activation row as BlockType::dotSplitRow takes it (SplitActivation makes it): value i is
/// highScale * high[i] + lowScale * low[i] to within highScale / 65536 (about 31 bits of the row's largest value,
/// finer than float32's 24-bit rounding of the products' sums), and blockSums[k] is the sum of values
/// 32k .. 32k + 31 (for the offsets of types whose values are d * q + m).
struct SplitRow {
    const int16_t* high = nullptr;
    const int16_t* low = nullptr;
    const float* blockSums = nullptr;
    float highScale = 0.0f;
    float lowScale = 0.0f;
};

/// The instruction sets of the kernels behind BlockType::dequantize() and dotRow(), lowest first.
/// Avx512 is F, BW, VL and VNNI together (Ice Lake, Zen 4 and later).
enum class KernelLevel { Portable, Avx2, Avx512 };

/// One ggml tensor type kvscope reads (gguf-py's quants.py: one class per block type): its geometry and its
/// dequantiser, exact to `gguf.quants.dequantize`. Each lives in one file of engine/gguf/blocks/ plus its
/// line in BlockTypeList.h.
class BlockType {
public:
    virtual ~BlockType() = default;

    virtual const GgmlTypeTraits& traits() const = 0;
    /// Writes `blockCount * blockSize` floats of `blockCount` consecutive blocks.
    virtual void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const = 0;
    /// Whether quantize() is ggml's reference quantiser for this type (the types llama.cpp's KV cache takes:
    /// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), byte for byte as `gguf.quants.quantize` (IQ4_NL,
    /// which gguf-py does not quantise, as llama.cpp's cache holds it).
    virtual bool quantizes() const { return false; }
    /// Writes `blockCount` blocks of `blockCount * blockSize` values; GgufError for a type that does not quantise.
    virtual void quantize(const float* values, size_t blockCount, uint8_t* out) const;
    /// out[t] = one row of `blockCount` blocks, dequantised as dequantize() gives it, dotted with input t of
    /// `inputCount` (each `blockCount * blockSize` floats, `inputStride` floats apart): a quantised matrix times
    /// activations without widening the matrix. The sums' order is this kernel's (not a BLAS product's), and a
    /// kernel may scale a block's sum instead of each value: float rounding apart, the same products.
    /// Types with a kernel of their own override it; the default dequantises the row, then dots.
    virtual void dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount,
                        size_t inputStride, float* out) const;
    /// Whether dotSplitRow has a kernel for this type at the kernel level in use.
    virtual bool dotsSplitRows() const { return false; }
    /// dotRow against split rows: each block's integer codes multiply the rows' 16-bit halves as integers (exact
    /// sums), scaled once per block; so a decode step's products cost about half the float kernel's
    /// instructions. Only where dotsSplitRows(); GgufError elsewhere.
    virtual void dotSplitRow(const uint8_t* blocks, size_t blockCount, const SplitRow* inputs, size_t inputCount,
                             float* out) const;

    uint32_t id() const { return traits().id; }
    const char* name() const { return traits().name; }
    uint32_t blockSize() const { return traits().blockSize; }
    uint32_t typeSize() const { return traits().typeSize; }

    /// The reader for ggml type `id`, or nullptr when kvscope does not dequantise it.
    static const BlockType* find(uint32_t id);
    /// The reader named `name` (ggml's spelling, any case: "q4_1"), or nullptr.
    static const BlockType* find(const std::string& name);
    /// Every type kvscope reads, in ggml's id order.
    static const std::vector<const BlockType*>& all();
    /// "F32, F16, BF16, ...": for messages refusing another type.
    static std::string readNames();
    /// The kernels in use: the highest level the processor runs, unless lowered by useKernelLevel() or by
    /// KVSCOPE_GGUF_KERNELS=portable|avx2 in the environment. Every level gives the same values.
    static KernelLevel kernelLevel();
    /// The highest level this processor runs.
    static KernelLevel supportedKernelLevel();
    /// Uses `level`, or the supported one where that is lower, for the whole process; returns the level now in
    /// use. For tests that compare the kernels, and for measuring them.
    static KernelLevel useKernelLevel(KernelLevel level);
    /// "portable", "avx2", "avx512".
    static const char* kernelLevelName(KernelLevel level);
    /// The geometry of any type ggml defines, or nullptr for an id it does not (or no longer) define.
    static const GgmlTypeTraits* ggmlType(uint32_t id);
};

} // namespace kvscope::gguf
