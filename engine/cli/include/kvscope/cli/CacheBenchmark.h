// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/MinMaxQuantizer.h"
#include "kvscope/config/ComputeDevice.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope::cli {

/// What `bench cache --type` times: one layer class, or dynamic layers in an offloading cache.
enum class BenchmarkedCache { Dynamic, DynamicSliding, Static, StaticSliding, Quantized, QuantizedHqq, Offloaded, Last = Offloaded };

std::string_view toString(BenchmarkedCache type);
std::optional<BenchmarkedCache> benchmarkedCacheFromString(std::string_view name);
std::string allowedBenchmarkedCaches();

/// The min-max quantizer implementations `bench cache --kernels` names: fused, libtorch.
std::string_view toString(cache::MinMaxQuantizer::Kernels kernels);
std::optional<cache::MinMaxQuantizer::Kernels> kernelsFromString(std::string_view name);
std::string allowedKernels();

/// The decode workload of the oracle's bench_reference.py, with the same flags.
struct CacheBenchmarkOptions {
    BenchmarkedCache type = BenchmarkedCache::Dynamic;
    int64_t layers = 8;
    int64_t batch = 1;
    int64_t heads = 8;
    int64_t headDim = 64;
    int64_t prefill = 128;
    int64_t steps = 512;
    int64_t window = 256;
    int nbits = 4;
    int64_t group = 64;
    int64_t residual = 128;
    int threads = 1;
    config::ComputeDevice device = config::ComputeDevice::Cpu;
    /// Min-max quantizer implementation (`quantized`): fused (the fused CPU loop / CUDA kernels) or
    /// libtorch (the reference's LibTorch operations).
    cache::MinMaxQuantizer::Kernels kernels = cache::MinMaxQuantizer::Kernels::Fused;
    /// Attach a trace::RecordingSink to the cache (every type then runs through a Cache), to measure
    /// what recording events costs per update.
    bool record = false;
    /// Host-device link of the modeled transfers (`offloaded` on CPU): GB/s and microseconds per copy.
    double transferGBps = 25.0;
    double transferLatencyUs = 10.0;
};

/// Times the engine's layers on that workload: one prefill update per layer, then `steps` one-token
/// updates layer by layer, each preceded by the mask-size query; inputs are made before the clock.
class CacheBenchmark {
public:
    /// Returns {"type", "updates", "seconds", "us_per_update", "peak_tokens"} as the reference prints.
    /// `offloaded` adds the modeled timeline of its copies (CPU has no second device, see
    /// cache::ModeledStreams): "modeled_ms" (whole run, both lanes), "modeled_step_ms" (per decode step),
    /// "modeled_compute_only_ms" (the updates alone: the run without offloading), "modeled_transfer_ms"
    /// (all copies), "modeled_stall_ms" (updates waiting for prefetches), "modeled_transfers".
    /// `offloaded` also adds "offload", the same analysis on every device (docs/gpu.md): "timing"
    /// (modeled on CPU, measured with device events on CUDA), per decode step "step_ms",
    /// "compute_only_step_ms" (the same workload without offloading, timed), "copy_only_step_ms" (the
    /// step's copies end to end), "hidden_fraction" (share of the copy time that prefetching overlaps
    /// with compute), "h2d_gbps" (prefetch bytes over prefetch time) against "plain_copy_gbps" (one
    /// plain copy of the mean prefetch size: pinned host to device on CUDA, host to host on CPU).
    /// `offloaded` always records (the analysis reads its Transfer events; CUDA times copies only for a
    /// sink). With `record`, "recorded_events" is the number of events the sink received. Wall times on
    /// CUDA end with a device synchronisation. A device this build cannot use (DeviceSupport) is refused
    /// with a CacheError.
    static nlohmann::json run(const CacheBenchmarkOptions& options);
};

} // namespace kvscope::cli
