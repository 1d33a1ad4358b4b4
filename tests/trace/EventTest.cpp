// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/Event.h"

#include <gtest/gtest.h>
#include <set>
#include <string>

using namespace kvscope::trace;

TEST(EventTest, KindFollowsTheHeldPayload) {
    EXPECT_EQ((Event{0, 0, 0, UpdateEvent{}}).kind(), EventKind::Update);
    EXPECT_EQ((Event{0, 0, 0, MaskSizesEvent{}}).kind(), EventKind::MaskSizes);
    EXPECT_EQ((Event{0, 0, 0, WindowSlideEvent{}}).kind(), EventKind::WindowSlide);
    EXPECT_EQ((Event{0, 0, 0, QuantizeFlushEvent{}}).kind(), EventKind::QuantizeFlush);
    EXPECT_EQ((Event{0, 0, 0, TransferEvent{}}).kind(), EventKind::Transfer);
    EXPECT_EQ((Event{0, -1, 0, CropEvent{}}).kind(), EventKind::Crop);
    EXPECT_EQ((Event{0, -1, 0, ReorderEvent{}}).kind(), EventKind::Reorder);
    EXPECT_EQ((Event{0, -1, 0, BatchRepeatEvent{}}).kind(), EventKind::BatchRepeat);
    EXPECT_EQ((Event{0, -1, 0, BatchSelectEvent{}}).kind(), EventKind::BatchSelect);
    EXPECT_EQ((Event{0, -1, 0, ResetEvent{}}).kind(), EventKind::Reset);
    EXPECT_EQ((Event{0, -1, 0, MemoryEvent{}}).kind(), EventKind::Memory);
    EXPECT_EQ((Event{0, -1, 0, StepBeginEvent{}}).kind(), EventKind::StepBegin);
    EXPECT_EQ((Event{0, -1, 0, StepEndEvent{}}).kind(), EventKind::StepEnd);
}

TEST(EventTest, KindNamesAreUniqueAndRoundTrip) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < kEventKindCount; ++i) {
        const auto kind = static_cast<EventKind>(i);
        const std::string name(toString(kind));
        EXPECT_NE(name, "unknown");
        EXPECT_TRUE(names.insert(name).second) << name;
        EXPECT_EQ(eventKindFromString(name), kind);
    }
    EXPECT_EQ(toString(static_cast<EventKind>(kEventKindCount)), "unknown");
    EXPECT_FALSE(eventKindFromString("Update").has_value());
}

TEST(EventTest, EnumNames) {
    EXPECT_EQ(toString(TransferDirection::Offload), "offload");
    EXPECT_EQ(toString(TransferDirection::Prefetch), "prefetch");
    EXPECT_EQ(toString(TransferLane::Compute), "compute");
    EXPECT_EQ(toString(TransferLane::Prefetch), "prefetch");
    EXPECT_EQ(toString(TimingSource::Measured), "measured");
    EXPECT_EQ(toString(TimingSource::Modeled), "modeled");
}

TEST(EventTest, DesignatedInitialisersBuildAnUpdate) {
    const Event event{.step = 5,
                      .layer = 3,
                      .sequence = 42,
                      .payload = UpdateEvent{.tokensIn = 1,
                                             .seqLength = 133,
                                             .storedTokens = 128,
                                             .capacity = 128,
                                             .returnedTokens = 129,
                                             .bytes = 4096 * 128,
                                             .layerType = LayerKind::DynamicSlidingWindow}};
    ASSERT_EQ(event.kind(), EventKind::Update);
    const auto& update = std::get<UpdateEvent>(event.payload);
    EXPECT_EQ(update.seqLength, 133);
    EXPECT_EQ(update.layerType, LayerKind::DynamicSlidingWindow);
    // Unset fields keep their documented defaults.
    EXPECT_EQ(UpdateEvent{}.capacity, -1);
    EXPECT_EQ(Event{}.layer, -1);
}

TEST(EventTest, CopiesCompareEqualAndDifferencesAreSeen) {
    const Event original{1, -1, 7, ReorderEvent{{2, 0, 1}}};
    Event copy = original;
    EXPECT_EQ(copy, original);
    std::get<ReorderEvent>(copy.payload).beamIndices[0] = 1;
    EXPECT_NE(copy, original);
    Event other = original;
    other.sequence = 8;
    EXPECT_NE(other, original);
    EXPECT_NE((Event{1, -1, 7, ResetEvent{}}), (Event{1, -1, 7, MemoryEvent{}}));
}

TEST(EventTest, StaysSmallEnoughToStoreMillions) {
    // A 32-layer, 32k-step session holds ~2.3M events; keep an eye on the per-event cost. The largest
    // payload sets it: the compression event's six lists (1.5 added ThinK's pruned channels, 1.7
    // KeyRerotation's position map, 24 bytes more: about 53 MiB over 2.3M in-memory events) make it 200 bytes
    // on 64-bit. File-backed sessions hold only a bounded cache of decoded steps.
    EXPECT_LE(sizeof(Event), 200u);
}
