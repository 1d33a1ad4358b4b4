// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: any bytes given to SafetensorsHeader::parse (what SafetensorsFile runs on a mapped
// model file) must either be refused with a ModelError or give entries that a view may safely read:
// each inside the data section and spanning exactly its shape's bytes, checked here in 128-bit
// arithmetic, independently of the parser's own overflow checks.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz SafetensorsHeaderFuzzer
// Run:   build/fuzz/tests/fuzz/SafetensorsHeaderFuzzer -max_len=65536 -rss_limit_mb=2048
//        tests/fuzz/safetensors-seeds tests/fuzz/safetensors-regressions
#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsHeader.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using kvscope::model::SafetensorsHeader;
    try {
        const SafetensorsHeader header = SafetensorsHeader::parse({data, size}, "fuzz");
        if (header.dataStart() < 8 || header.dataStart() > size) {
            std::abort();
        }
        const unsigned __int128 dataSize = size - header.dataStart();
        for (const auto& [name, entry] : header.entries()) {
            unsigned __int128 bytes = SafetensorsHeader::dtypeBytes(entry.dtype);
            bool huge = bytes == 0;
            bool empty = false;
            for (const std::int64_t dimension : entry.shape) {
                if (dimension < 0) {
                    std::abort();
                }
                empty = empty || dimension == 0;
            }
            for (const std::int64_t dimension : entry.shape) {
                if (empty || huge) {
                    break;
                }
                bytes *= static_cast<std::uint64_t>(dimension); // both factors below 2^64: no wrap
                huge = bytes > dataSize;
            }
            bytes = empty ? 0 : bytes;
            if (huge || entry.begin > entry.end || entry.end > dataSize || entry.end - entry.begin != bytes) {
                std::abort(); // a view of this entry would read outside the file
            }
        }
    } catch (const kvscope::model::ModelError&) {
    }
    return 0;
}
