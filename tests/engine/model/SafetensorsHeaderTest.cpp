// SPDX-License-Identifier: GPL-3.0-or-later
// SafetensorsHeader: a table of headers with what each must give (the entries, or a refusal naming the
// problem), and every fuzzer seed and regression (tests/fuzz/safetensors-*) replayed with the fuzzer's
// own check: refused with a ModelError, or every entry inside the data section with exactly its bytes.
#include "kvscope/model/SafetensorsHeader.h"

#include "kvscope/model/ModelError.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

using kvscope::model::ModelError;
using kvscope::model::SafetensorsHeader;

namespace {

std::vector<std::uint8_t> file(const std::string& header, std::size_t dataBytes, std::uint64_t declared = 0) {
    const std::uint64_t length = declared != 0 ? declared : header.size();
    std::vector<std::uint8_t> bytes;
    for (int shift = 0; shift < 64; shift += 8) { // little-endian, as the format stores it
        bytes.push_back(static_cast<std::uint8_t>(length >> shift));
    }
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + dataBytes, 0x5a);
    return bytes;
}

std::string refusalInSafetensorsHeader(const std::vector<std::uint8_t>& bytes) {
    try {
        (void)SafetensorsHeader::parse(bytes, "file `x`");
    } catch (const ModelError& error) {
        return error.what();
    }
    return "";
}

struct Refused {
    const char* name;
    std::string header;
    std::size_t dataBytes;
    const char* says;
};

} // namespace

TEST(SafetensorsHeaderTest, ReadsEntriesAndMetadata) {
    const auto bytes = file(R"({"__metadata__": {"format": "pt", "n": 3},
        "w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [4, 16]},
        "s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
        "e": {"dtype": "F16", "shape": [0, 9223372036854775807], "data_offsets": [16, 16]}})",
                            16);
    const SafetensorsHeader header = SafetensorsHeader::parse(bytes, "file `x`");
    EXPECT_EQ(header.dataStart(), bytes.size() - 16);
    EXPECT_EQ(header.metadata(), (std::map<std::string, std::string>{{"format", "pt"}})); // strings only
    ASSERT_EQ(header.entries().size(), 3u);
    const auto& w = header.entries().at("w");
    EXPECT_EQ(w.dtype, "BF16");
    EXPECT_EQ(w.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(w.begin, 4u);
    EXPECT_EQ(w.end, 16u);
    EXPECT_TRUE(header.entries().at("s").shape.empty());
    EXPECT_EQ(header.entries().at("e").shape, (std::vector<std::int64_t>{0, 9223372036854775807}));
}

TEST(SafetensorsHeaderTest, RefusesWhatNoWriterProduces) {
    const std::vector<Refused> cases = {
        {"no length", "", 0, "too short (0 bytes)"},
        {"not JSON", "{nope", 0, "not valid JSON"},
        {"not an object", "[1, 2]", 0, "not a JSON object"},
        {"entry not an object", R"({"x": 5})", 0, "`x`: the entry is not a JSON object"},
        {"dtype not a string", R"({"x": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4, "`dtype`"},
        {"unknown dtype", R"({"x": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8,
         "dtype I64 (allowed: F32, F16, BF16)"},
        {"float dimension", R"({"x": {"dtype": "F32", "shape": [1.5e300], "data_offsets": [0, 4]}})", 4,
         "`shape` holds 1.5e+300, not an integer >= 0"},
        {"negative dimension", R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4,
         "`shape` holds -1"},
        {"negative offset", R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
         "not two integers >= 0"},
        {"one offset", R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4]}})", 4,
         "not [begin, end]"},
        // 4 bytes x 2^62 x 4 wraps to 0 in 64 bits: the view would read 2^66 bytes from an empty span.
        {"overflowing shape",
         R"({"x": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})", 0,
         "overflows 64 bits"},
        {"overflowing extent",
         R"({"x": {"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]}})", 0,
         "overflows 64 bits"},
        {"past the data", R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8,
         "outside the 8-byte data section"},
        {"reversed offsets", R"({"x": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 8, "[8, 4]"},
        {"wrong span", R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8,
         "spans 8 bytes but its shape and dtype need 12"},
    };
    for (const Refused& entry : cases) {
        const auto bytes = std::string(entry.name) == "no length" ? std::vector<std::uint8_t>{}
                                                                  : file(entry.header, entry.dataBytes);
        const std::string message = refusalInSafetensorsHeader(bytes);
        EXPECT_NE(message.find(entry.says), std::string::npos) << entry.name << ": " << message;
        EXPECT_EQ(message.rfind("file `x`", 0), 0u) << entry.name << ": " << message;
    }
    EXPECT_NE(refusalInSafetensorsHeader(file("{}", 0, 1000)).find("declares a 1000-byte header but holds only 2"),
              std::string::npos);
    // A length past the limit is refused before anything is parsed.
    const auto huge = file("{}", 0, SafetensorsHeader::kMaxHeaderBytes + 1);
    EXPECT_NE(refusalInSafetensorsHeader(huge).find("declares a 104857601-byte header; at most 104857600"), std::string::npos)
        << refusalInSafetensorsHeader(huge);
}

TEST(SafetensorsHeaderTest, EveryFuzzerSeedAndRegressionIsRefusedOrSafe) {
    int files = 0;
    for (const char* folder : {"safetensors-seeds", "safetensors-regressions"}) {
        for (const auto& entry : std::filesystem::directory_iterator(
                 std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests/fuzz" / folder)) {
            std::ifstream in(entry.path(), std::ios::binary);
            const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                                  std::istreambuf_iterator<char>());
            ++files;
            try {
                const SafetensorsHeader header =
                    SafetensorsHeader::parse(bytes, entry.path().filename().string());
                const unsigned __int128 dataSize = bytes.size() - header.dataStart();
                for (const auto& [name, tensor] : header.entries()) {
                    // 128 bits, stopping once past the data: no wrap, whatever the parser did.
                    unsigned __int128 need = SafetensorsHeader::dtypeBytes(tensor.dtype);
                    for (const std::int64_t dimension : tensor.shape) {
                        need = dimension == 0    ? 0
                               : need > dataSize ? need
                                                 : need * static_cast<std::uint64_t>(dimension);
                        if (need == 0) {
                            break;
                        }
                    }
                    EXPECT_LE(tensor.begin, tensor.end) << entry.path() << " " << name;
                    EXPECT_LE(tensor.end, dataSize) << entry.path() << " " << name;
                    EXPECT_TRUE(tensor.end - tensor.begin == need) << entry.path() << " " << name;
                }
            } catch (const ModelError&) {
            }
        }
    }
    EXPECT_GE(files, 19); // the seeds alone: the preset headers and the hand-made edge cases
}
