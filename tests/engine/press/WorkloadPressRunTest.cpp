// SPDX-License-Identifier: GPL-3.0-or-later
// A registered press applied to the synthetic workload layer as a generation applies it: the kept slots are
// those an independent reading of the press's rule gives, decoding presses hold the cache at their size, and
// every registration runs its prefill and decoding passes (what the press benchmarks time).
#include "kvscope/press/WorkloadPressRun.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressWorkload.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>
#include <set>
#include <vector>

namespace {

using kvscope::config::PressSettings;
using kvscope::press::PressCatalog;
using kvscope::press::PressWorkload;
using kvscope::press::WorkloadPressRun;

const kvscope::press::PressWorkloadShape kShape{4, 2, 16};

WorkloadPressRun runOf(const PressWorkload& workload, const PressSettings& settings) {
    return WorkloadPressRun(workload, PressCatalog::generation(settings), settings.ratio);
}

TEST(WorkloadPressRunTest, KnormKeepsEachHeadsKeysOfSmallestNorm) {
    const PressWorkload workload(64, kShape);
    WorkloadPressRun run = runOf(workload, {"knorm", 0.5, {}});
    const auto action = run.decide(run.prefill(64));
    ASSERT_TRUE(action.kept.defined());
    EXPECT_EQ(run.cached(), 32) << "int(64 * (1 - 0.5))";
    for (int64_t head = 0; head < kShape.keyValueHeads; ++head) {
        const at::Tensor norms = workload.inputs().keys[0][head].norm(2, -1);
        std::vector<int64_t> order(64);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return norms[a].item<float>() < norms[b].item<float>();
        });
        const std::set<int64_t> expected(order.begin(), order.begin() + 32);
        const at::Tensor kept = action.kept[0][head];
        const std::set<int64_t> actual(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel());
        EXPECT_EQ(actual, expected) << "head " << head;
    }
}

TEST(WorkloadPressRunTest, DecodingPressComesBackToItsTargetEveryInterval) {
    const PressWorkload workload(48, kShape);
    WorkloadPressRun run =
        runOf(workload, {"decoding", 0.0, {{"target_size", "40"}, {"compression_interval", "4"}}});
    EXPECT_FALSE(run.decide(run.prefill(40)).acted());
    std::vector<int64_t> cached;
    for (int step = 0; step < 8; ++step) {
        run.decide(run.next());
        cached.push_back(run.cached());
    }
    EXPECT_EQ(cached, (std::vector<int64_t>{41, 42, 43, 40, 41, 42, 43, 40}));
    EXPECT_EQ(run.seen(), 48);
    EXPECT_THROW(run.next(), std::invalid_argument) << "the workload has no 49th token";
}

TEST(WorkloadPressRunTest, HeavyHittersEvictOneSlotEveryStepAtTheirBudget) {
    const PressWorkload workload(24, kShape);
    WorkloadPressRun run = runOf(workload, {"h2o", 0.0, {{"budget", "16"}, {"recent_window", "2"}}});
    run.decide(run.prefill(16));
    EXPECT_EQ(run.cached(), 16);
    for (int step = 0; step < 4; ++step) {
        EXPECT_TRUE(run.decide(run.next()).kept.defined()) << step;
        EXPECT_EQ(run.cached(), 16);
    }
}

TEST(WorkloadPressRunTest, HoldingAtSizesOnlyWhatAPressDeclares) {
    EXPECT_EQ(WorkloadPressRun::holdingAt("decoding", {}, 96).at("target_size"), "96");
    EXPECT_EQ(WorkloadPressRun::holdingAt("h2o", {{"budget", "32"}}, 96).at("budget"), "32")
        << "a given size stays";
    EXPECT_TRUE(WorkloadPressRun::holdingAt("snapkv", {}, 96).empty());
}

// The benchmarks' promise: every registration runs on the workload, prefill and decoding passes alike.
TEST(WorkloadPressRunTest, EveryRegisteredPressRunsOnTheWorkload) {
    // 96 tokens, and 1024, where PyramidKV's budget formula applies (at 96 its pyramid does not fit the
    // window): the workload is one layer, which PyramidKV divided by zero on, crashing `bench press`.
    for (const std::int64_t prompt : {std::int64_t{96}, std::int64_t{1024}}) {
        const PressWorkload workload(prompt + 4, kShape);
        for (const auto& description : kvscope::config::PressDescriptions::all()) {
            PressSettings settings{description.name, 0.5,
                                   WorkloadPressRun::holdingAt(description.name, {}, prompt)};
            WorkloadPressRun run = runOf(workload, settings);
            EXPECT_NO_THROW(run.decide(run.prefill(prompt))) << description.name << " at " << prompt;
            for (int step = 0; step < 4; ++step) {
                EXPECT_NO_THROW(run.decide(run.next())) << description.name << " at " << prompt;
            }
            EXPECT_LE(run.cached(), prompt + 4) << description.name;
            EXPECT_EQ(run.seen(), prompt + 4) << description.name;
        }
    }
}

TEST(WorkloadPressRunTest, PyramidKvOnOneLayerKeepsTheUniformBudget) {
    // 1024 tokens at ratio 0.5: a one-layer model has no pyramid, so its layer keeps round(1024 * 0.5).
    const PressWorkload workload(1024, kShape);
    const PressSettings settings{"pyramidkv", 0.5, {}};
    WorkloadPressRun run = runOf(workload, settings);
    run.decide(run.prefill(1024));
    EXPECT_EQ(run.cached(), 512);
}

} // namespace
