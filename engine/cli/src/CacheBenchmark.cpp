#include "CacheBenchmark.h"

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/MinMaxQuantizer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/cache/TransferModel.h"
#include "kvscope/trace/RecordingSink.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>

namespace kvscope::cli {
namespace {

using namespace kvscope::cache;

std::unique_ptr<CacheLayer> makeLayer(const CacheBenchmarkOptions& options) {
    const int64_t total = options.prefill + options.steps;
    const std::string& type = options.type;
    if (type == "dynamic" || type == "offloaded") {
        return std::make_unique<DynamicLayer>();
    }
    if (type == "dynamic_sliding") {
        return std::make_unique<DynamicSlidingWindowLayer>(options.window);
    }
    if (type == "static") {
        return std::make_unique<StaticLayer>(total);
    }
    if (type == "static_sliding") {
        return std::make_unique<StaticSlidingWindowLayer>(total, options.window);
    }
    if (type == "quantized") {
        return std::make_unique<QuantizedLayer>(std::make_shared<MinMaxQuantizer>(options.nbits, options.group), 0, 0,
                                                options.residual);
    }
    if (type == "quantized_hqq") {
        return std::make_unique<QuantizedLayer>(std::make_shared<HqqQuantizer>(options.nbits, options.group), 1, 1,
                                                options.residual);
    }
    throw CacheError(ErrorKind::Value, "unknown --type `" + type + "` (allowed: " + CacheBenchmark::allowedTypes() + ")");
}

} // namespace

const char* CacheBenchmark::allowedTypes() {
    return "dynamic, dynamic_sliding, static, static_sliding, quantized, quantized_hqq, offloaded";
}

nlohmann::json CacheBenchmark::run(const CacheBenchmarkOptions& options) {
    if (options.device != "cpu") {
        throw CacheError(ErrorKind::Value, "--device " + options.device +
                                               " is not available in this build (allowed here: cpu)");
    }
    at::set_num_threads(options.threads);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(0);
    const at::TensorOptions floatOptions = at::TensorOptions().dtype(at::kFloat);
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (int64_t index = 0; index < options.layers; ++index) {
        layers.push_back(makeLayer(options));
    }
    const bool offloaded = options.type == "offloaded";
    // Events are emitted by the Cache, so recording runs every type through one.
    const bool viaCache = offloaded || options.record;
    trace::RecordingSink sink; // declared first: it must outlive the cache that emits into it
    std::unique_ptr<Cache> cache;
    if (viaCache) {
        cache = std::make_unique<Cache>(std::move(layers), /*offloading=*/offloaded, /*offloadOnlyNonSliding=*/false);
        cache->setTransferModel(TransferModel(options.transferGBps, options.transferLatencyUs));
        if (options.record) {
            // MaskSizes and Update per update (plus a flush, transfers and Memory where they happen) and
            // the totals per step: room for all of them up front, as a session of known length reserves.
            sink.reserve(static_cast<size_t>(options.layers * (options.steps + 1) * (offloaded ? 7 : 4)));
            cache->setEventSink(&sink);
        }
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> prefill;
    for (int64_t index = 0; index < options.layers; ++index) {
        prefill.emplace_back(at::randn({options.batch, options.heads, options.prefill, options.headDim}, generator, floatOptions),
                             at::randn({options.batch, options.heads, options.prefill, options.headDim}, generator, floatOptions));
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> pool;
    for (int index = 0; index < 64; ++index) {
        pool.emplace_back(at::randn({options.batch, options.heads, 1, options.headDim}, generator, floatOptions),
                          at::randn({options.batch, options.heads, 1, options.headDim}, generator, floatOptions));
    }
    auto step = [&](int64_t layerIdx, const at::Tensor& keys, const at::Tensor& values, int64_t queryLength) {
        if (viaCache) {
            (void)cache->maskSizes(queryLength, layerIdx);
            (void)cache->update(keys, values, layerIdx);
        } else {
            AttentionLayer& layer = *layers[static_cast<size_t>(layerIdx)]->asAttention();
            (void)layer.maskSizes(queryLength);
            (void)layer.update(keys, values);
        }
    };
    int64_t modeledAfterPrefillNs = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t index = 0; index < options.layers; ++index) {
        step(index, prefill[static_cast<size_t>(index)].first, prefill[static_cast<size_t>(index)].second, options.prefill);
    }
    if (viaCache) {
        cache->finishStep();
    }
    if (offloaded) {
        modeledAfterPrefillNs = cache->modeledStreams().makespanNs();
    }
    for (int64_t s = 0; s < options.steps; ++s) {
        if (viaCache) {
            cache->setStep(s + 1);
        }
        const auto& [keys, values] = pool[static_cast<size_t>(s % 64)];
        for (int64_t index = 0; index < options.layers; ++index) {
            step(index, keys, values, 1);
        }
        if (viaCache) {
            cache->finishStep(); // as a generator closes each step (the step's memory totals)
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int64_t updates = options.layers * (options.steps + 1);
    auto rounded = [](double value, double scale) { return std::round(value * scale) / scale; };
    nlohmann::json result = {{"type", options.type},
                             {"updates", updates},
                             {"seconds", rounded(seconds, 1e6)},
                             {"us_per_update", rounded(seconds / static_cast<double>(updates) * 1e6, 1e3)},
                             {"peak_tokens", options.prefill + options.steps}};
    if (offloaded) {
        const ModeledStreams& modeled = cache->modeledStreams();
        auto ms = [&rounded](int64_t ns) { return rounded(static_cast<double>(ns) / 1e6, 1e6); };
        result["modeled_ms"] = ms(modeled.makespanNs());
        result["modeled_step_ms"] =
            options.steps > 0 ? ms((modeled.makespanNs() - modeledAfterPrefillNs) / options.steps) : 0.0;
        result["modeled_compute_only_ms"] = ms(modeled.computeNs());
        result["modeled_transfer_ms"] = ms(modeled.transferNs());
        result["modeled_stall_ms"] = ms(modeled.stallNs());
        result["modeled_transfers"] = modeled.transferCount();
        result["transfer_gbps"] = options.transferGBps;
        result["transfer_latency_us"] = options.transferLatencyUs;
    }
    if (options.record) {
        result["recorded_events"] = sink.size();
    }
    return result;
}

} // namespace kvscope::cli
