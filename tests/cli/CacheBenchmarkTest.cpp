// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/CacheBenchmark.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DeviceSupport.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kvscope::cli::CacheBenchmark;
using kvscope::cli::CacheBenchmarkOptions;

namespace {

CacheBenchmarkOptions small(const std::string& type, const std::string& device = "cpu") {
    CacheBenchmarkOptions options;
    options.type = kvscope::cli::benchmarkedCacheFromString(type).value();
    options.layers = 2;
    options.heads = 2;
    options.prefill = 16;
    options.steps = 24;
    options.window = 8;
    options.group = 32;
    options.residual = 8;
    options.device = kvscope::config::computeDeviceFromString(device).value();
    return options;
}

std::string refusal(const CacheBenchmarkOptions& options) {
    try {
        CacheBenchmark::run(options);
    } catch (const kvscope::cache::CacheError& error) {
        return error.what();
    }
    return "";
}

TEST(CacheBenchmarkTest, CpuResultKeepsTheReferenceKeys) {
    const nlohmann::json result = CacheBenchmark::run(small("dynamic"));
    EXPECT_EQ(result.at("type"), "dynamic");
    EXPECT_EQ(result.at("updates"), 2 * 25);
    EXPECT_EQ(result.at("peak_tokens"), 40);
    EXPECT_GT(result.at("us_per_update").get<double>(), 0.0);
    EXPECT_EQ(result.at("device"), "cpu");
    EXPECT_FALSE(result.contains("offload"));
}

TEST(CacheBenchmarkTest, CudaIsRefusedWhereThisBuildCannotUseIt) {
    if (kvscope::cache::DeviceSupport::cudaAvailable()) {
        GTEST_SKIP() << "this machine has CUDA";
    }
    const std::string message = refusal(small("dynamic", "cuda"));
    EXPECT_NE(message.find("device `cuda` is not available"), std::string::npos) << message;
    EXPECT_NE(message.find("allowed here: cpu"), std::string::npos) << message;
}

TEST(CacheBenchmarkTest, QuantizedRunsWithEitherKernelsAndNamesThem) {
    for (const char* kernels : {"fused", "libtorch"}) {
        CacheBenchmarkOptions options = small("quantized");
        options.kernels = kvscope::cli::kernelsFromString(kernels).value();
        const nlohmann::json result = CacheBenchmark::run(options);
        EXPECT_EQ(result.at("kernels"), kernels);
        EXPECT_EQ(result.at("updates"), 50);
    }
    EXPECT_EQ(kvscope::cli::kernelsFromString("cublas"), std::nullopt);
    EXPECT_EQ(kvscope::cli::allowedKernels(), "fused, libtorch");
}

TEST(CacheBenchmarkTest, OffloadedReportsHowMuchPrefetchHidesOnTheModeledTimeline) {
    const nlohmann::json result = CacheBenchmark::run(small("offloaded"));
    const nlohmann::json& offload = result.at("offload");
    EXPECT_EQ(offload.at("timing"), "modeled");
    EXPECT_NEAR(offload.at("step_ms").get<double>(), result.at("modeled_step_ms").get<double>(), 1e-4);
    EXPECT_GT(offload.at("compute_only_step_ms").get<double>(), 0.0);
    EXPECT_GT(offload.at("copy_only_step_ms").get<double>(), 0.0);
    EXPECT_GE(offload.at("hidden_fraction").get<double>(), 0.0);
    EXPECT_LE(offload.at("hidden_fraction").get<double>(), 1.0);
    // The model's link is 25 GB/s with 10 us per copy: small copies reach a fraction of it.
    EXPECT_GT(offload.at("h2d_gbps").get<double>(), 0.0);
    EXPECT_LT(offload.at("h2d_gbps").get<double>(), 25.0);
    EXPECT_GT(offload.at("plain_copy_gbps").get<double>(), 0.0);
    // Each decode step copies every layer of 40 tokens or fewer: 2 heads x 64 dims x 4 bytes x 2.
    EXPECT_GT(offload.at("mean_prefetch_bytes").get<int64_t>(), 0);
    EXPECT_LE(offload.at("mean_prefetch_bytes").get<int64_t>(), 40 * 2 * 64 * 4 * 2);
}

TEST(CacheBenchmarkTest, CudaOffloadingIsMeasured) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    const nlohmann::json result = CacheBenchmark::run(small("offloaded", "cuda"));
    EXPECT_EQ(result.at("device"), "cuda");
    EXPECT_EQ(result.at("offload").at("timing"), "measured");
    EXPECT_GT(result.at("offload").at("copy_only_step_ms").get<double>(), 0.0);
    EXPECT_GT(result.at("offload").at("h2d_gbps").get<double>(), 0.0);
    for (const char* kernels : {"fused", "libtorch"}) {
        CacheBenchmarkOptions options = small("quantized", "cuda");
        options.kernels = kvscope::cli::kernelsFromString(kernels).value();
        EXPECT_EQ(CacheBenchmark::run(options).at("kernels"), kernels);
    }
}

} // namespace
