#include "kvscope/cache/DeviceSupport.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::refuses;

TEST(DeviceSupportTest, CpuIsAlwaysAllowed) {
    EXPECT_EQ(DeviceSupport::refusal("cpu"), "");
    EXPECT_EQ(DeviceSupport::resolve("cpu"), c10::Device(c10::kCPU));
}

TEST(DeviceSupportTest, UnknownDevicesAreRefusedNamingTheAllowedOnes) {
    EXPECT_EQ(DeviceSupport::refusal("tpu"), "unknown device `tpu` (allowed: cpu, cuda)");
    EXPECT_TRUE(
        refuses([] { DeviceSupport::resolve("CUDA"); }, ErrorKind::Value, {"`CUDA`", "allowed: cpu, cuda"}));
}

TEST(DeviceSupportTest, CudaIsRefusedWithTheReasonWhereItIsUnavailable) {
    EXPECT_EQ(DeviceSupport::cudaAvailable(), at::hasCUDA());
    if (DeviceSupport::cudaAvailable()) {
        EXPECT_TRUE(DeviceSupport::torchHasCuda());
        EXPECT_EQ(DeviceSupport::refusal("cuda"), "");
        EXPECT_TRUE(DeviceSupport::resolve("cuda").is_cuda());
        return;
    }
    const std::string why = DeviceSupport::torchHasCuda() ? "sees no GPU" : "LibTorch without CUDA";
    EXPECT_NE(DeviceSupport::refusal("cuda").find(why), std::string::npos) << DeviceSupport::refusal("cuda");
    EXPECT_TRUE(refuses([] { DeviceSupport::resolve("cuda"); }, ErrorKind::Value,
                        {"device `cuda` is not available", why, "allowed here: cpu"}));
}

} // namespace
} // namespace kvscope::cache
