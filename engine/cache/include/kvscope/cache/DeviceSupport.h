#pragma once

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
    /// Empty when `name` ("cpu" or "cuda") can be used here; else why not, naming the allowed values.
    static std::string refusal(const std::string& name);
    /// The device called `name`; a CacheError (ValueError) with refusal(name) when it cannot be used.
    static c10::Device resolve(const std::string& name);
};

} // namespace kvscope::cache
