// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "BlockTypeRegistration.h"
#include "RowDot.h"
#include "SplitRowKernels.h"

namespace kvscope::gguf {

/// A block type whose kernel widens each block to floats and dots them (rowdot::dotWidened): `Type` gives
/// kValues and kBytes (a block's values and bytes), widenPortable() (gguf-py's arithmetic in plain loops) and,
/// on x86, `WidenAvx2` (the same values to the bit, vectorised). The AVX2 path runs where the processor has it. A
/// type that also gives `DecodeCodesAvx2` and `kSplitOffset` has an integer kernel (SplitRowKernels).
template <typename Type>
class WidenedBlockType : public SplitRowKernels<Type> {
public:
    void dequantize(const uint8_t* blocks, size_t blockCount, float* out) const final {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::widenBlocks<Type::kValues>(blocks, Type::kBytes, blockCount, out, typename Type::WidenAvx2());
            return;
        }
#endif
        static_cast<const Type*>(this)->widenPortable(blocks, blockCount, out);
    }
    void dotRow(const uint8_t* blocks, size_t blockCount, const float* inputs, size_t inputCount, size_t inputStride,
                float* out) const final {
#if KVSCOPE_ROWDOT_X86
        if (rowdot::avx2()) {
            rowdot::dotWidened<Type::kValues>(blocks, Type::kBytes, blockCount, inputs, inputCount, inputStride, out,
                                              typename Type::WidenAvx2());
            return;
        }
#endif
        BlockType::dotRow(blocks, blockCount, inputs, inputCount, inputStride, out);
    }
};

} // namespace kvscope::gguf
