// SPDX-License-Identifier: GPL-3.0-or-later
// ComputeThreads: every core by default, an explicit count otherwise, for LibTorch and the BLAS alike.
#include "kvscope/runtime/ComputeThreads.h"

#include "kvscope/runtime/BlasLibrary.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

using kvscope::runtime::BlasLibrary;
using kvscope::runtime::ComputeThreads;

TEST(ComputeThreadsTest, DefaultsToEveryCoreAndTakesACount) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    ASSERT_GT(cores, 0);
    EXPECT_EQ(ComputeThreads::machineCores(), cores);
    const bool openBlas = BlasLibrary::loaded().implementation == "openblas";
    // (requested, in effect): 0 and below mean every core.
    for (const auto& [requested, expected] :
         std::vector<std::pair<int, int>>{{0, cores}, {1, 1}, {-3, cores}, {3, 3}}) {
        EXPECT_EQ(ComputeThreads::apply(requested), expected) << requested;
        EXPECT_EQ(at::get_num_threads(), expected) << requested;
        if (openBlas) {
            EXPECT_EQ(BlasLibrary::loaded().threads, expected) << requested;
        }
        const nlohmann::json described = ComputeThreads::describe();
        EXPECT_EQ(described.at("threads"), expected);
        EXPECT_EQ(described.at("blas").at("path"), BlasLibrary::loaded().path);
    }
}
