// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/DecodingPress.h"

#include "kvscope/press/PressCatalog.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

using kvscope::press::DecodingPress;
using kvscope::press::PressCatalog;
using kvscope::press::PressInputs;

TEST(DecodingPressTest, TargetRatioKeepsExactlyTheTarget) {
    EXPECT_EQ(DecodingPress::targetRatio(10, 12), 0.0);
    for (int64_t length : {13, 100, 4097}) {
        const double ratio = DecodingPress::targetRatio(length, 12);
        EXPECT_EQ(static_cast<int64_t>(static_cast<double>(length) * (1.0 - ratio)), 12) << length;
    }
}

TEST(DecodingPressTest, CompressesEveryIntervalBackToTheTarget) {
    DecodingPress press(PressCatalog::scorer("knorm", {}), /*compressionInterval=*/3, /*targetSize=*/8,
                        /*bufferSize=*/2);
    PressInputs inputs;
    inputs.numHeads = inputs.numKeyValueHeads = 2;
    inputs.headDim = 4;
    at::Tensor keys = at::randn({1, 2, 8, 4});
    int compressions = 0;
    for (int step = 0; step < 9; ++step) {
        keys = at::cat({keys, at::randn({1, 2, 1, 4})}, 2);
        inputs.keys = inputs.values = keys;
        const bool due = press.append(inputs, 1);
        EXPECT_EQ(due, step % 3 == 2) << step;
        if (due) {
            const auto result = press.compress(inputs);
            EXPECT_EQ(result.bufferLength, 3);
            EXPECT_EQ(result.selection.keptCount, 8);
            keys = keys.gather(2, result.selection.keptIndices.unsqueeze(-1).expand({-1, -1, -1, 4}));
            ++compressions;
        }
    }
    EXPECT_EQ(compressions, 3);
    EXPECT_EQ(keys.size(2), 8);
}

TEST(DecodingPressTest, RefusesAZeroInterval) {
    EXPECT_THROW(DecodingPress(PressCatalog::scorer("knorm", {}), 0, 8, 0), std::invalid_argument);
}

} // namespace
