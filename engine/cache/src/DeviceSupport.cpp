// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DeviceSupport.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/Context.h>

namespace kvscope::cache {

bool DeviceSupport::torchHasCuda() {
#if KVSCOPE_TORCH_CUDA
    return true;
#else
    return false;
#endif
}

bool DeviceSupport::cudaAvailable() {
    return at::hasCUDA();
}

std::string DeviceSupport::refusal(config::ComputeDevice device) {
    if (device == config::ComputeDevice::Cpu) {
        return {};
    }
    if (!torchHasCuda()) {
        return "device `cuda` is not available: this build uses a LibTorch without CUDA (allowed here: cpu; "
               "scripts/gpu-check.sh builds against PyTorch's CUDA LibTorch)";
    }
    if (!cudaAvailable()) {
        return "device `cuda` is not available: this LibTorch has CUDA but sees no GPU (check the driver and "
               "CUDA_VISIBLE_DEVICES; allowed here: cpu)";
    }
    return {};
}

c10::Device DeviceSupport::resolve(config::ComputeDevice device) {
    if (const std::string why = refusal(device); !why.empty()) {
        throw CacheError(ErrorKind::Value, why);
    }
    return device == config::ComputeDevice::Cuda ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU);
}

} // namespace kvscope::cache
