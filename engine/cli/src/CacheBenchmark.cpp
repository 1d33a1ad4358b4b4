// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/CacheBenchmark.h"

#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/cache/LayerSpec.h"
#include "kvscope/config/NameTable.h"
#include "kvscope/cache/TransferModel.h"
#include "kvscope/trace/RecordingSink.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

namespace kvscope::cli {
namespace {

using namespace kvscope::cache;
using Clock = std::chrono::steady_clock;

constexpr config::NameTable<BenchmarkedCache, 7> kTypeNames{{{
    {BenchmarkedCache::Dynamic, "dynamic"},
    {BenchmarkedCache::DynamicSliding, "dynamic_sliding"},
    {BenchmarkedCache::Static, "static"},
    {BenchmarkedCache::StaticSliding, "static_sliding"},
    {BenchmarkedCache::Quantized, "quantized"},
    {BenchmarkedCache::QuantizedHqq, "quantized_hqq"},
    {BenchmarkedCache::Offloaded, "offloaded"},
}}};
static_assert(kTypeNames.entries().size() == static_cast<size_t>(BenchmarkedCache::Last) + 1, "one name per type");

constexpr config::NameTable<MinMaxQuantizer::Kernels, 2> kKernelNames{{{
    {MinMaxQuantizer::Kernels::Fused, "fused"},
    {MinMaxQuantizer::Kernels::LibTorch, "libtorch"},
}}};

/// The layers the workload updates, as the reference's benchmark builds them.
LayerSpec layerSpec(const CacheBenchmarkOptions& options) {
    LayerSpec spec;
    spec.slidingWindow = options.window;
    spec.maxCacheLen = options.prefill + options.steps;
    spec.nbits = options.nbits;
    spec.groupSize = options.group;
    spec.residualLength = options.residual;
    spec.kernels = options.kernels;
    switch (options.type) {
    case BenchmarkedCache::Dynamic:
    case BenchmarkedCache::Offloaded:
        spec.type = LayerType::Dynamic;
        break;
    case BenchmarkedCache::DynamicSliding:
        spec.type = LayerType::DynamicSliding;
        break;
    case BenchmarkedCache::Static:
        spec.type = LayerType::Static;
        break;
    case BenchmarkedCache::StaticSliding:
        spec.type = LayerType::StaticSliding;
        break;
    case BenchmarkedCache::Quantized:
        spec.type = LayerType::QuantizedMinMax;
        break;
    case BenchmarkedCache::QuantizedHqq:
        // HQQ groups inside one token, along axis 1, as the reference's HQQ benchmark does.
        spec.type = LayerType::QuantizedHqq;
        spec.axisKey = 1;
        spec.axisValue = 1;
        break;
    }
    return spec;
}

/// Waits for the device: on CUDA, kernels and copies run after the host has moved on.
void synchronize(const at::Device& device) {
    if (device.is_cuda()) {
        torch::cuda::synchronize(device.index());
    }
}

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double rounded(double value, double scale) {
    return std::round(value * scale) / scale;
}

/// The benchmark's inputs, made on the CPU from one seed (the same values on every device) and moved.
struct Inputs {
    std::vector<std::pair<at::Tensor, at::Tensor>> prefill;
    std::vector<std::pair<at::Tensor, at::Tensor>> pool;

    Inputs(const CacheBenchmarkOptions& options, const at::Device& device) {
        auto generator = at::make_generator<at::CPUGeneratorImpl>(0);
        const at::TensorOptions floats = at::TensorOptions().dtype(at::kFloat);
        auto make = [&](int64_t tokens) {
            return at::randn({options.batch, options.heads, tokens, options.headDim}, generator, floats)
                .to(device);
        };
        for (int64_t index = 0; index < options.layers; ++index) {
            at::Tensor keys = make(options.prefill);
            prefill.emplace_back(keys, make(options.prefill));
        }
        for (int index = 0; index < 64; ++index) {
            at::Tensor keys = make(1);
            pool.emplace_back(keys, make(1));
        }
    }
};

/// One pass of the workload: a prefill update per layer, then `steps` one-token updates layer by layer.
class Workload {
public:
    Workload(const CacheBenchmarkOptions& options, const Inputs& inputs, const at::Device& device,
             bool offloading, bool viaCache, trace::EventSink* sink)
        : m_options(options), m_inputs(inputs), m_device(device), m_viaCache(viaCache) {
        for (int64_t index = 0; index < options.layers; ++index) {
            m_layers.push_back(makeLayer(layerSpec(options)));
        }
        if (viaCache) {
            m_cache = std::make_unique<Cache>(std::move(m_layers), offloading ? Offloading::AllLayers : Offloading::Off);
            m_cache->setTransferModel(TransferModel(options.transferGBps, options.transferLatencyUs));
            if (sink != nullptr) {
                m_cache->setEventSink(sink);
            }
        }
    }
    void prefill() {
        for (int64_t index = 0; index < m_options.layers; ++index) {
            const auto& [keys, values] = m_inputs.prefill[static_cast<size_t>(index)];
            update(index, keys, values, m_options.prefill);
        }
        if (m_viaCache) {
            m_cache->finishStep();
        }
    }
    void decode() {
        for (int64_t s = 0; s < m_options.steps; ++s) {
            if (m_viaCache) {
                m_cache->setStep(s + 1);
            }
            const auto& [keys, values] = m_inputs.pool[static_cast<size_t>(s % 64)];
            for (int64_t index = 0; index < m_options.layers; ++index) {
                update(index, keys, values, 1);
            }
            if (m_viaCache) {
                m_cache->finishStep(); // as a generator closes each step (the step's memory totals)
            }
        }
    }
    /// Prefill then decode, timed to the end of the device's work; returns {whole, decode} seconds.
    std::pair<double, double> timed() {
        synchronize(m_device);
        const auto start = Clock::now();
        prefill();
        synchronize(m_device);
        const auto decodeStart = Clock::now();
        const int64_t modeledAfterPrefill = m_viaCache ? m_cache->modeledStreams().makespanNs() : 0;
        decode();
        synchronize(m_device);
        m_modeledDecodeNs = m_viaCache ? m_cache->modeledStreams().makespanNs() - modeledAfterPrefill : 0;
        return {secondsSince(start), secondsSince(decodeStart)};
    }
    const Cache* cache() const { return m_cache.get(); }
    int64_t modeledDecodeNs() const { return m_modeledDecodeNs; }

private:
    void update(int64_t layerIdx, const at::Tensor& keys, const at::Tensor& values, int64_t queryLength) {
        if (m_viaCache) {
            (void)m_cache->maskSizes(queryLength, layerIdx);
            (void)m_cache->update(keys, values, layerIdx);
            return;
        }
        AttentionLayer& layer = *m_layers[static_cast<size_t>(layerIdx)]->asAttention();
        (void)layer.maskSizes(queryLength);
        (void)layer.update(keys, values);
    }

    const CacheBenchmarkOptions& m_options;
    const Inputs& m_inputs;
    at::Device m_device;
    bool m_viaCache;
    std::vector<std::unique_ptr<CacheLayer>> m_layers;
    std::unique_ptr<Cache> m_cache;
    int64_t m_modeledDecodeNs = 0;
};

/// GB/s of one plain copy of `bytes`, repeated: pinned host memory to the device on CUDA, host memory
/// to host memory on the CPU (the dry run's stand-in).
double plainCopyGBps(int64_t bytes, const at::Device& device) {
    const int64_t elements = std::max<int64_t>(bytes / static_cast<int64_t>(sizeof(float)), 1);
    at::Tensor host = at::randn({elements});
    if (device.is_cuda()) {
        host = host.pin_memory();
    }
    at::Tensor target = at::empty({elements}, at::TensorOptions().dtype(at::kFloat).device(device));
    target.copy_(host, /*non_blocking=*/true); // warm-up: first-touch and allocation
    synchronize(device);
    constexpr int kRepeats = 20;
    const auto start = Clock::now();
    for (int repeat = 0; repeat < kRepeats; ++repeat) {
        target.copy_(host, /*non_blocking=*/true);
    }
    synchronize(device);
    const double seconds = secondsSince(start);
    return seconds > 0 ? static_cast<double>(elements * static_cast<int64_t>(sizeof(float))) * kRepeats /
                             seconds / 1e9
                       : 0.0;
}

/// How much of the copies prefetching hides, from the decode steps' Transfer events.
nlohmann::json offloadAnalysis(const CacheBenchmarkOptions& options, const Workload& offloaded,
                               double offloadedDecodeSeconds, double computeOnlyDecodeSeconds,
                               const std::vector<trace::Event>& events, const at::Device& device) {
    int64_t copyNs = 0;
    int64_t prefetchNs = 0;
    int64_t prefetchBytes = 0;
    int64_t prefetches = 0;
    for (const trace::Event& event : events) {
        const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload);
        if (transfer == nullptr || event.step < 1) {
            continue;
        }
        copyNs += transfer->endNs - transfer->beginNs;
        if (transfer->direction == trace::TransferDirection::Prefetch) {
            prefetchNs += transfer->endNs - transfer->beginNs;
            prefetchBytes += transfer->bytes;
            ++prefetches;
        }
    }
    const auto steps = static_cast<double>(std::max<int64_t>(options.steps, 1));
    const double stepMs = device.is_cuda() ? offloadedDecodeSeconds * 1e3 / steps
                                           : static_cast<double>(offloaded.modeledDecodeNs()) / 1e6 / steps;
    const double computeOnlyMs = computeOnlyDecodeSeconds * 1e3 / steps;
    const double copyOnlyMs = static_cast<double>(copyNs) / 1e6 / steps;
    // Serial execution would take compute + copies; what the step saves against that is what overlapped.
    const double hidden =
        copyOnlyMs > 0 ? std::clamp((computeOnlyMs + copyOnlyMs - stepMs) / copyOnlyMs, 0.0, 1.0) : 0.0;
    const double h2dGBps =
        prefetchNs > 0 ? static_cast<double>(prefetchBytes) / static_cast<double>(prefetchNs) : 0.0;
    const int64_t meanPrefetchBytes = prefetches > 0 ? prefetchBytes / prefetches : 0;
    return {{"timing", device.is_cuda() ? "measured" : "modeled"},
            {"step_ms", rounded(stepMs, 1e4)},
            {"compute_only_step_ms", rounded(computeOnlyMs, 1e4)},
            {"copy_only_step_ms", rounded(copyOnlyMs, 1e4)},
            {"hidden_fraction", rounded(hidden, 1e3)},
            {"h2d_gbps", rounded(h2dGBps, 1e2)},
            {"plain_copy_gbps",
             meanPrefetchBytes > 0 ? rounded(plainCopyGBps(meanPrefetchBytes, device), 1e2) : 0.0},
            {"mean_prefetch_bytes", meanPrefetchBytes}};
}

} // namespace

std::string_view toString(BenchmarkedCache type) { return kTypeNames.name(type); }
std::optional<BenchmarkedCache> benchmarkedCacheFromString(std::string_view name) { return kTypeNames.parse(name); }
std::string allowedBenchmarkedCaches() { return kTypeNames.allowed(); }
std::string_view toString(MinMaxQuantizer::Kernels kernels) { return kKernelNames.name(kernels); }
std::optional<MinMaxQuantizer::Kernels> kernelsFromString(std::string_view name) { return kKernelNames.parse(name); }
std::string allowedKernels() { return kKernelNames.allowed(); }

nlohmann::json CacheBenchmark::run(const CacheBenchmarkOptions& options) {
    const at::Device device = DeviceSupport::resolve(options.device);
    // One thread by default: the per-update cost, not the machine's width (LibTorch's and the BLAS's).
    runtime::ComputeThreads::apply(options.threads);
    const Inputs inputs(options, device);
    const bool offloaded = options.type == BenchmarkedCache::Offloaded;
    // Events are emitted by the Cache, so recording runs every type through one.
    const bool recording = offloaded || options.record;
    trace::RecordingSink sink; // declared first: it must outlive the cache that emits into it
    if (recording) {
        // MaskSizes and Update per update (plus a flush, transfers and Memory where they happen) and
        // the totals per step: room for all of them up front, as a session of known length reserves.
        sink.reserve(static_cast<size_t>(options.layers * (options.steps + 1) * (offloaded ? 7 : 4)));
    }
    Workload workload(options, inputs, device, offloaded, recording, recording ? &sink : nullptr);
    const auto [seconds, decodeSeconds] = workload.timed();
    const int64_t updates = options.layers * (options.steps + 1);
    nlohmann::json result = {{"type", toString(options.type)},
                             {"updates", updates},
                             {"seconds", rounded(seconds, 1e6)},
                             {"us_per_update", rounded(seconds / static_cast<double>(updates) * 1e6, 1e3)},
                             {"peak_tokens", options.prefill + options.steps},
                             {"device", config::toString(options.device)}};
    result.update(runtime::ComputeThreads::describe());
    if (options.type == BenchmarkedCache::Quantized) {
        result["kernels"] = toString(options.kernels);
    }
    if (offloaded) {
        const ModeledStreams& modeled = workload.cache()->modeledStreams();
        auto ms = [](int64_t ns) { return rounded(static_cast<double>(ns) / 1e6, 1e6); };
        if (!device.is_cuda()) {
            result["modeled_ms"] = ms(modeled.makespanNs());
            result["modeled_step_ms"] =
                options.steps > 0 ? ms(workload.modeledDecodeNs() / options.steps) : 0.0;
            result["modeled_compute_only_ms"] = ms(modeled.computeNs());
            result["modeled_transfer_ms"] = ms(modeled.transferNs());
            result["modeled_stall_ms"] = ms(modeled.stallNs());
            result["modeled_transfers"] = modeled.transferCount();
            result["transfer_gbps"] = options.transferGBps;
            result["transfer_latency_us"] = options.transferLatencyUs;
        }
        // The baseline: the same workload and device without offloading.
        Workload computeOnly(options, inputs, device, /*offloading=*/false, /*viaCache=*/false, nullptr);
        const double computeOnlyDecodeSeconds = computeOnly.timed().second;
        result["offload"] = offloadAnalysis(options, workload, decodeSeconds, computeOnlyDecodeSeconds,
                                            sink.events(), device);
    }
    if (options.record) {
        result["recorded_events"] = sink.size();
    }
    return result;
}

} // namespace kvscope::cli
