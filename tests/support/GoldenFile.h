// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kvscope::testing {

/// Golden files: a test's whole output, byte for byte, under tests/data/goldens/. They are written by the
/// code they check, never by hand: run the test with KVSCOPE_UPDATE_GOLDENS=1 to write them, then review
/// the diff (docs/testing.md, "Golden outputs").
class GoldenFile {
public:
    static std::filesystem::path path(const std::string& name) {
        return std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "goldens" / name;
    }

    /// Whether `text` is the golden file `name`'s content; on a difference, the first differing line of
    /// each. With KVSCOPE_UPDATE_GOLDENS=1 the file is written instead.
    static ::testing::AssertionResult matches(const std::string& name, const std::string& text) {
        const std::filesystem::path file = path(name);
        if (const char* update = std::getenv("KVSCOPE_UPDATE_GOLDENS"); update && std::string(update) == "1") {
            std::filesystem::create_directories(file.parent_path());
            std::ofstream(file, std::ios::binary) << text;
            return ::testing::AssertionSuccess() << "wrote " << file;
        }
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            return ::testing::AssertionFailure()
                   << file << " is missing: write it with KVSCOPE_UPDATE_GOLDENS=1";
        }
        const std::string golden{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (golden == text) {
            return ::testing::AssertionSuccess();
        }
        std::istringstream expected(golden);
        std::istringstream actual(text);
        std::string expectedLine;
        std::string actualLine;
        for (int line = 1;; ++line) {
            const bool moreExpected = static_cast<bool>(std::getline(expected, expectedLine));
            const bool moreActual = static_cast<bool>(std::getline(actual, actualLine));
            if (!moreExpected || !moreActual || expectedLine != actualLine) {
                return ::testing::AssertionFailure()
                       << file << " differs at line " << line << ":\n  golden: "
                       << (moreExpected ? expectedLine : "<end>") << "\n  now:    "
                       << (moreActual ? actualLine : "<end>");
            }
        }
    }
};

} // namespace kvscope::testing
