// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ComputeDevice.h"

#include <c10/core/Device.h>
#include <string>

namespace kvscope::cache {

/// Which devices this build can keep caches on: the one check behind every `--device` option, so that
/// each command refuses `cuda` with the same message (what was asked, why it is unavailable, what is
/// allowed).
class DeviceSupport {
public:
    /// Whether kvscope was compiled against a LibTorch with CUDA.
    static bool torchHasCuda();
    /// Whether CUDA tensors can be made now (a CUDA LibTorch and a visible GPU).
    static bool cudaAvailable();
    /// Empty when `device` can be used here; else why not, naming what is allowed here.
    static std::string refusal(config::ComputeDevice device);
    /// The LibTorch device; a CacheError (ValueError) with refusal(device) when it cannot be used.
    static c10::Device resolve(config::ComputeDevice device);
};

} // namespace kvscope::cache
