// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "BlockTypeRegistration.h"
#include "RowDot.h"

namespace kvscope::gguf {

/// BlockType's integer-kernel overrides for a block type `Type` (CRTP) that gives its blocks as integer codes:
/// `Type::kValues`, `kBytes`, `kSplitOffset` and, on x86, `DecodeCodesAvx2` (rowdot::dotSplit's decoder). A type
/// without `DecodeCodesAvx2` has no integer kernel. The AVX-512 kernel (the same decoder, VNNI's products) runs
/// where the processor has that level, the AVX2 one where it has AVX2.
template <typename Type>
class SplitRowKernels : public BlockType {
public:
    bool dotsSplitRows() const final {
#if KVSCOPE_ROWDOT_X86
        if constexpr (requires { typename Type::DecodeCodesAvx2; }) {
            return rowdot::avx2();
        }
#endif
        return false;
    }
    void dotSplitRow(const uint8_t* blocks, size_t blockCount, const SplitRow* inputs, size_t inputCount,
                     float* out) const final {
#if KVSCOPE_ROWDOT_X86
        if constexpr (requires { typename Type::DecodeCodesAvx2; }) {
            if (rowdot::avx512()) {
                rowdot::dotSplitAvx512<Type::kValues, Type::kSplitOffset>(
                    blocks, Type::kBytes, blockCount, inputs, inputCount, out, typename Type::DecodeCodesAvx2());
                return;
            }
            if (rowdot::avx2()) {
                rowdot::dotSplit<Type::kValues, Type::kSplitOffset>(blocks, Type::kBytes, blockCount, inputs,
                                                                    inputCount, out, typename Type::DecodeCodesAvx2());
                return;
            }
        }
#endif
        BlockType::dotSplitRow(blocks, blockCount, inputs, inputCount, out);
    }
};

} // namespace kvscope::gguf
