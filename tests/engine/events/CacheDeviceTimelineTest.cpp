// SPDX-License-Identifier: GPL-3.0-or-later
// Offloading on CUDA (DeviceStreams through Cache::update): caches stay on the device between updates,
// host copies are pinned, and every copy and update is timed with device events (Measured), with the
// streams' dependencies. Skipped without CUDA.

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/trace/RecordingSink.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <torch/version.h>

namespace kvscope::cache {
namespace {

constexpr int kLayers = 3;
constexpr int kSteps = 4;

std::unique_ptr<Cache> offloadedCache() {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (int index = 0; index < kLayers; ++index) {
        layers.push_back(std::make_unique<DynamicLayer>());
    }
    return std::make_unique<Cache>(std::move(layers), Offloading::AllLayers);
}

/// Prefill of 8 tokens and kSteps one-token steps; returns every update's returned keys, on the CPU.
std::vector<at::Tensor> run(Cache& cache, const at::Device& device) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
    std::vector<at::Tensor> returned;
    for (int step = 0; step <= kSteps; ++step) {
        cache.setStep(step);
        for (int layer = 0; layer < kLayers; ++layer) {
            const at::Tensor keys = at::randn({1, 2, step == 0 ? 8 : 1, 16}, generator).to(device);
            returned.push_back(cache.update(keys, keys * 2, layer).keys.cpu());
        }
        cache.finishStep();
    }
    return returned;
}

TEST(CacheDeviceTimelineTest, CudaOffloadingIsMeasuredAndMatchesTheCpu) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    auto onCpu = offloadedCache();
    auto onCuda = offloadedCache();
    trace::RecordingSink sink;
    onCuda->setEventSink(&sink);
    const std::vector<at::Tensor> expected = run(*onCpu, at::Device(at::kCPU));
    const std::vector<at::Tensor> actual = run(*onCuda, at::Device(at::kCUDA));
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t index = 0; index < actual.size(); ++index) {
        EXPECT_TRUE(actual[index].equal(expected[index])) << "update " << index;
    }

    // Offloaded layers are held in pinned host memory; the others on the device.
    for (int layer = 0; layer < kLayers; ++layer) {
        const at::Tensor keys = onCuda->layer(static_cast<size_t>(layer)).asAttention()->keys();
        if (onCuda->isOffloaded(static_cast<size_t>(layer))) {
            EXPECT_TRUE(keys.is_cpu() && keys.is_pinned()) << "layer " << layer;
        } else {
            EXPECT_TRUE(keys.is_cuda()) << "layer " << layer;
        }
    }

    int computes = 0;
    int transfers = 0;
    std::map<std::pair<int64_t, int32_t>, trace::ComputeEvent> computeOf;
    for (const trace::Event& event : sink.events()) {
        if (const auto* compute = std::get_if<trace::ComputeEvent>(&event.payload)) {
            ++computes;
            EXPECT_EQ(compute->timing, trace::TimingSource::Measured);
            EXPECT_LE(compute->beginNs, compute->endNs);
            computeOf[{event.step, event.layer}] = *compute;
        } else if (const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload)) {
            ++transfers;
            EXPECT_EQ(transfer->timing, trace::TimingSource::Measured);
            EXPECT_LE(transfer->beginNs, transfer->endNs);
            EXPECT_GT(transfer->bytes, 0);
        }
    }
    EXPECT_EQ(computes, kLayers * (kSteps + 1)); // one per update
    EXPECT_GT(transfers, 0);

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    // With device timing (LibTorch >= 2.4), a layer's update starts after the prefetch that brought it
    // back ends: the compute stream waits for the side stream.
    for (const trace::Event& event : sink.events()) {
        const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload);
        if (transfer == nullptr || transfer->direction != trace::TransferDirection::Prefetch) {
            continue;
        }
        // A prefetch issued during layer i - 1's update is for layer i of the same step (layer 0: the next).
        const int64_t step = event.layer == 0 ? event.step + 1 : event.step;
        const auto found = computeOf.find({step, event.layer});
        if (found != computeOf.end()) {
            EXPECT_GE(found->second.beginNs, transfer->endNs) << "layer " << event.layer << " step " << step;
        }
    }
#endif
}

} // namespace
} // namespace kvscope::cache
