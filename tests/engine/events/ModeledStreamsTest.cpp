// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/ModeledStreams.h"

#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using Span = ModeledStreams::Span;

// 1 GB/s and no latency: a copy of N bytes takes N ns; updates cost 100 ns.
ModeledStreams streams() { return ModeledStreams(TransferModel(1.0, 0.0, 0.1)); }

TEST(ModeledStreamsTest, ComputeAndOffloadShareTheComputeLaneInCallOrder) {
    ModeledStreams lanes = streams();
    EXPECT_EQ(lanes.compute(999), (Span{0, 100}));
    EXPECT_EQ(lanes.offload(0, 50), (Span{100, 150}));
    EXPECT_EQ(lanes.compute(999), (Span{150, 250}));
    EXPECT_EQ(lanes.computeLaneFreeNs(), 250);
    EXPECT_EQ(lanes.prefetchLaneFreeNs(), 0);
}

TEST(ModeledStreamsTest, APrefetchWaitsForTheLanesPreviousCopyAndTheLayersOffload) {
    ModeledStreams lanes = streams();
    lanes.compute(0);                                   // [0, 100)
    lanes.offload(1, 300);                              // [100, 400) on the compute lane
    EXPECT_EQ(lanes.prefetch(2, 50), (Span{0, 50}));    // layer 2 was never offloaded
    EXPECT_EQ(lanes.prefetch(1, 10), (Span{400, 410})); // after layer 1's offload
    EXPECT_EQ(lanes.prefetch(2, 10), (Span{410, 420})); // after the lane's previous copy
}

TEST(ModeledStreamsTest, ComputeWaitsOnlyForPrefetchesScheduledBeforeTheWait) {
    ModeledStreams lanes = streams();
    lanes.prefetch(1, 500); // [0, 500)
    lanes.computeWaitsForPrefetches();
    lanes.prefetch(2, 1000); // [500, 1500): issued after the wait, so the update does not wait for it
    EXPECT_EQ(lanes.compute(0), (Span{500, 600}));
    EXPECT_EQ(lanes.stallNs(), 500);
    EXPECT_EQ(lanes.compute(0), (Span{600, 700}));
    lanes.computeWaitsForPrefetches();
    EXPECT_EQ(lanes.compute(0), (Span{1500, 1600}));
    EXPECT_EQ(lanes.stallNs(), 500 + 800);
    EXPECT_EQ(lanes.makespanNs(), 1600);
}

TEST(ModeledStreamsTest, FetchOnTheComputeLaneBlocksTheNextUpdate) {
    ModeledStreams lanes = streams();
    lanes.offload(0, 200);                                         // [0, 200)
    EXPECT_EQ(lanes.fetchOnComputeLane(0, 100), (Span{200, 300})); // after its own offload
    EXPECT_EQ(lanes.compute(0), (Span{300, 400}));
}

TEST(ModeledStreamsTest, TotalsAddUp) {
    ModeledStreams lanes = streams();
    lanes.compute(0);
    lanes.offload(0, 40);
    lanes.prefetch(0, 60);
    lanes.fetchOnComputeLane(1, 5);
    EXPECT_EQ(lanes.transferNs(), 105);
    EXPECT_EQ(lanes.transferCount(), 3);
    EXPECT_EQ(lanes.computeNs(), 100);
}

TEST(ModeledStreamsTest, MeasuredTimeIsUsedWithoutAFixedCost) {
    ModeledStreams lanes{TransferModel()};
    EXPECT_EQ(lanes.compute(1234), (Span{0, 1234}));
    lanes.setModel(TransferModel(25.0, 10.0, 2.0));
    EXPECT_EQ(lanes.compute(1234), (Span{1234, 3234}));
}

} // namespace
} // namespace kvscope::cache
