// SPDX-License-Identifier: GPL-3.0-or-later
// BlasLibrary against the process's own memory map: the library it names is one the process really
// mapped, its kind agrees with where that file lives, and OpenBLAS's thread count reads back as set.
// (tests/cli/blas_reference.sh forces Debian's reference BLAS into kvscope-cli and checks it is named.)
#include "kvscope/runtime/BlasLibrary.h"

#include <ATen/ATen.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

using kvscope::runtime::BlasLibrary;

namespace {

std::set<std::string> mappedFiles() {
    std::ifstream maps("/proc/self/maps");
    std::set<std::string> files;
    std::string line;
    while (std::getline(maps, line)) {
        const auto slash = line.find('/');
        if (slash != std::string::npos) {
            std::error_code error;
            const auto canonical = std::filesystem::canonical(line.substr(slash), error);
            files.insert(error ? line.substr(slash) : canonical.string());
        }
    }
    return files;
}

} // namespace

TEST(BlasLibraryTest, NamesTheMappedLibraryThatServesSgemm) {
    (void)at::mm(at::ones({8, 8}), at::ones({8, 8})); // a float GEMM: LibTorch calls sgemm_
    const BlasLibrary blas = BlasLibrary::loaded();
    ASSERT_FALSE(blas.path.empty()) << "LibTorch links libblas.so.3: sgemm_ must be found";
    EXPECT_EQ(mappedFiles().count(blas.path), 1u) << blas.path;
    const std::set<std::string> kinds = {"openblas", "blis", "mkl", "reference", "unknown"};
    EXPECT_EQ(kinds.count(blas.implementation), 1u) << blas.implementation;
    if (blas.path.find("openblas") != std::string::npos) {
        EXPECT_EQ(blas.implementation, "openblas");
        EXPECT_EQ(blas.version.rfind("OpenBLAS", 0), 0u) << blas.version;
    }
    if (std::filesystem::path(blas.path).parent_path().filename() == "blas") {
        EXPECT_EQ(blas.implementation, "reference");
        EXPECT_EQ(blas.threads, -1);
    }
    const auto json = blas.toJson();
    EXPECT_EQ(json.at("path"), blas.path);
    EXPECT_EQ(json.at("implementation"), blas.implementation);
}

TEST(BlasLibraryTest, OpenBlasThreadsReadBackAsSet) {
    if (BlasLibrary::loaded().implementation != "openblas") {
        GTEST_SKIP() << "the BLAS here is " << BlasLibrary::loaded().implementation;
    }
    for (const int threads : {1, 2, 1}) {
        EXPECT_TRUE(BlasLibrary::setThreads(threads));
        EXPECT_EQ(BlasLibrary::loaded().threads, threads);
    }
}
