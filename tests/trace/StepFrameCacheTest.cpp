// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/StepFrameCache.h"

#include <gtest/gtest.h>
#include <stdexcept>

using namespace kvscope::trace;

namespace {

std::vector<Event> frameOf(std::int64_t step) {
    return {Event{step, 0, 0, MaskSizesEvent{1, step, 0}}, Event{step, -1, 1, ResetEvent{}}};
}

} // namespace

TEST(StepFrameCacheTest, KeepsTheMostRecentlyUsedStepsAndDecodesEvictedOnesAgain) {
    StepFrameCache cache(3);
    int decoded = 0;
    const auto get = [&](std::int64_t step) {
        return cache.get(step, [&] {
            ++decoded;
            return frameOf(step);
        });
    };
    const auto first = get(1);
    get(2);
    get(3);
    EXPECT_EQ(decoded, 3);
    get(1); // 1 becomes the most recent; 2 is now the least recently used
    EXPECT_EQ(decoded, 3);
    get(4); // drops 2
    EXPECT_EQ(cache.size(), 3u);
    get(1);
    get(3);
    EXPECT_EQ(decoded, 4) << "1 and 3 stayed";
    const auto again = get(2);
    EXPECT_EQ(decoded, 5) << "2 was dropped and is decoded again";
    EXPECT_EQ(*again, frameOf(2));
    EXPECT_EQ(*first, frameOf(1)) << "a frame handed out outlives its eviction";
    EXPECT_EQ(cache.decodes(), 5u);
    cache.clear();
    EXPECT_EQ(cache.size(), 0u);
}

TEST(StepFrameCacheTest, AFailedDecodeCachesNothing) {
    StepFrameCache cache(2);
    EXPECT_THROW(cache.get(7, []() -> std::vector<Event> { throw std::runtime_error("damaged"); }),
                 std::runtime_error);
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(*cache.get(7, [] { return frameOf(7); }), frameOf(7));
}
