// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/BlockType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::gguf {

/// One tensor's entry in a GGUF file: name, ggml dims (ne[0] varies fastest), type and where its bytes lie.
struct GgufTensorInfo {
    std::string name;
    std::vector<uint64_t> dims;
    GgmlTypeTraits type;
    /// From the start of the file (the stored offset plus the data section's start).
    uint64_t fileOffset = 0;
    uint64_t byteSize = 0;
    uint64_t elementCount = 0;

    /// PyTorch's order (the dims reversed): `blk.0.attn_k.weight` with ne [576, 192] is [192, 576].
    std::vector<int64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
};

} // namespace kvscope::gguf
