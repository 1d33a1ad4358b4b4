// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/TransferModel.h"

#include <gtest/gtest.h>

#include <limits>

namespace kvscope::cache {
namespace {

TEST(TransferModelTest, DefaultsAreTwentyFiveGigabytesPerSecondAndTenMicroseconds) {
    const TransferModel model;
    EXPECT_EQ(model.bandwidthGBps(), 25.0);
    EXPECT_EQ(model.latencyUs(), 10.0);
    EXPECT_FALSE(model.computeUsPerUpdate().has_value());
    // 25 GB/s moves 25 bytes per nanosecond: 1 MB takes 40 us, plus the 10 us latency.
    EXPECT_EQ(model.transferNs(1'000'000), 50'000);
    EXPECT_EQ(model.transferNs(0), 10'000);
}

TEST(TransferModelTest, DurationIsLatencyPlusBytesOverBandwidth) {
    const TransferModel model(12.5, 2.5);
    EXPECT_EQ(model.transferNs(125), 2'510);
    EXPECT_EQ(model.transferNs(1 << 20), 2'500 + 83'886);
}

TEST(TransferModelTest, ComputeIsMeasuredUnlessAFixedCostIsSet) {
    EXPECT_EQ(TransferModel().computeNs(1234), 1234);
    EXPECT_EQ(TransferModel(25.0, 10.0, 7.5).computeNs(1234), 7500);
    EXPECT_EQ(TransferModel(25.0, 10.0, 0.0).computeNs(1234), 0);
}

TEST(TransferModelTest, RefusesMeaninglessSettings) {
    EXPECT_THROW(TransferModel(0.0), CacheError);
    EXPECT_THROW(TransferModel(-1.0), CacheError);
    EXPECT_THROW(TransferModel(std::numeric_limits<double>::infinity()), CacheError);
    EXPECT_THROW(TransferModel(std::numeric_limits<double>::quiet_NaN()), CacheError);
    EXPECT_THROW(TransferModel(25.0, -0.5), CacheError);
    EXPECT_THROW(TransferModel(25.0, 10.0, -1.0), CacheError);
    EXPECT_THROW(TransferModel().transferNs(-1), CacheError);
    try {
        TransferModel(0.0);
    } catch (const CacheError& error) {
        EXPECT_EQ(error.kind(), ErrorKind::Value);
        EXPECT_NE(std::string(error.what()).find("bandwidth"), std::string::npos) << error.what();
    }
}

} // namespace
} // namespace kvscope::cache
