// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DeviceSupport.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::refuses;

TEST(DeviceSupportTest, CpuIsAlwaysAllowed) {
    EXPECT_EQ(DeviceSupport::refusal(config::ComputeDevice::Cpu), "");
    EXPECT_EQ(DeviceSupport::resolve(config::ComputeDevice::Cpu), c10::Device(c10::kCPU));
}

TEST(DeviceSupportTest, CudaIsRefusedWithTheReasonWhereItIsUnavailable) {
    EXPECT_EQ(DeviceSupport::cudaAvailable(), at::hasCUDA());
    if (DeviceSupport::cudaAvailable()) {
        EXPECT_TRUE(DeviceSupport::torchHasCuda());
        EXPECT_EQ(DeviceSupport::refusal(config::ComputeDevice::Cuda), "");
        EXPECT_TRUE(DeviceSupport::resolve(config::ComputeDevice::Cuda).is_cuda());
        return;
    }
    const std::string why = DeviceSupport::torchHasCuda() ? "sees no GPU" : "LibTorch without CUDA";
    EXPECT_NE(DeviceSupport::refusal(config::ComputeDevice::Cuda).find(why), std::string::npos) << DeviceSupport::refusal(config::ComputeDevice::Cuda);
    EXPECT_TRUE(refuses([] { DeviceSupport::resolve(config::ComputeDevice::Cuda); }, ErrorKind::Value,
                        {"device `cuda` is not available", why, "allowed here: cpu"}));
}

} // namespace
} // namespace kvscope::cache
