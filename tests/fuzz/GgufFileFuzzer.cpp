// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: any bytes opened as a GGUF file (what `--model FILE.gguf` reads from strangers) must either
// be refused with a GgufError or give tensors whose bytes lie inside the input, checked here in 128-bit
// arithmetic independently of the reader's own checks; every tensor of a type kvscope reads then dequantises
// and dots as one row with two inputs, through the float and the integer kernels (under ASan, any read past its bytes is caught), every metadata value
// renders, and the tokenizer the metadata describes (byte-level BPE or SentencePiece) is written or refused.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz GgufFileFuzzer
// Run:   build/fuzz/tests/fuzz/GgufFileFuzzer -max_len=65536 -rss_limit_mb=2048 tests/fuzz/gguf-seeds
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufError.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTokenizerJson.h"
#include "kvscope/gguf/SplitActivation.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using kvscope::gguf::GgufFile;
    try {
        const GgufFile file = GgufFile::fromBytes(std::vector<std::uint8_t>(data, data + size), "fuzz");
        for (const auto& [key, value] : file.metadata().values()) {
            (void)value.summary();
        }
        if (file.metadata().contains("tokenizer.ggml.model")) {
            try {
                (void)kvscope::gguf::GgufTokenizerJson::fromMetadata(file.metadata(), "fuzz");
            } catch (const kvscope::gguf::GgufError&) {
            }
        }
        for (const auto& info : file.tensors()) {
            const unsigned __int128 end = static_cast<unsigned __int128>(info.fileOffset) + info.byteSize;
            if (info.fileOffset < file.dataOffset() || end > size ||
                static_cast<unsigned __int128>(info.elementCount) / info.type.blockSize * info.type.typeSize !=
                    info.byteSize) {
                std::abort();
            }
            if (const auto* type = kvscope::gguf::BlockType::find(info.type.id)) {
                std::vector<float> values(static_cast<std::size_t>(info.elementCount));
                file.dequantize(info, values.data());
                // The product kernel (a packed matrix's) reads every block of every row, two inputs at a time.
                const std::size_t blocks = static_cast<std::size_t>(info.elementCount / type->blockSize());
                const std::vector<float> inputs(2 * blocks * type->blockSize(), 1.0f);
                float sums[2];
                if (blocks > 0) {
                    type->dotRow(file.bytes(info).data(), blocks, inputs.data(), 2, blocks * type->blockSize(), sums);
                }
                // The integer kernel (a decode step's), against the same inputs split into 16-bit halves.
                if (blocks > 0 && type->dotsSplitRows()) {
                    kvscope::gguf::SplitActivation halves;
                    if (halves.split(inputs.data(), 2, blocks * type->blockSize(), blocks * type->blockSize())) {
                        type->dotSplitRow(file.bytes(info).data(), blocks, halves.rows(), 2, sums);
                    }
                }
            }
        }
    } catch (const kvscope::gguf::GgufError&) {
    }
    return 0;
}
