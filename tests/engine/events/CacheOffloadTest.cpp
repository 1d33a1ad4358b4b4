// SPDX-License-Identifier: GPL-3.0-or-later
// Offloading through Cache::update: the order of prefetches and offloads is the reference's
// (hf-cache.md 1.3.7), and on CPU the modeled timeline keeps the GPU's dependencies.

#include "EventTestHelpers.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/trace/RecordingSink.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <map>
#include <memory>

namespace kvscope::cache {
namespace {

using testing::eventsOf;
using testing::tokens;
using trace::TransferDirection;
using trace::TransferLane;

// The reference notes' model: is_sliding = [T, F, T, T, F, T].
const std::vector<bool> kSliding = {true, false, true, true, false, true};

std::unique_ptr<Cache> tableCache(bool onlyNonSliding) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (bool sliding : kSliding) {
        if (sliding) {
            layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
        } else {
            layers.push_back(std::make_unique<DynamicLayer>());
        }
    }
    return std::make_unique<Cache>(std::move(layers), onlyNonSliding ? Offloading::OnlyNonSliding : Offloading::AllLayers);
}

struct Move {
    int64_t step;
    int32_t duringUpdateOf; // the layer whose Cache::update made the move
    int32_t layer;
    TransferDirection direction;
    bool operator==(const Move&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Move& move) {
    return out << "{step " << move.step << ", update of " << move.duringUpdateOf << ", layer " << move.layer
               << ", " << trace::toString(move.direction) << "}";
}

// The calls of the hf-cache.md 1.3.7 table: per updated layer, the layer prefetched and whether the
// updated layer is offloaded.
struct Call {
    int32_t prefetch;
    bool offload;
};
const std::map<bool, std::vector<Call>> kTable = {
    {true, {{1, false}, {4, true}, {4, false}, {4, false}, {1, true}, {1, false}}},
    {false, {{1, true}, {2, true}, {3, true}, {4, true}, {5, true}, {0, true}}},
};

// What those calls move, by the reference's rules: `offload` moves an initialised layer to the host,
// `prefetch` moves a layer back only if it is on the host (and is a no-op before initialisation).
std::vector<Move> referenceMoves(bool onlyNonSliding, int64_t steps) {
    std::vector<bool> onHost(kSliding.size(), false);
    std::vector<bool> initialized(kSliding.size(), false);
    std::vector<Move> moves;
    for (int64_t step = 0; step < steps; ++step) {
        for (int32_t layer = 0; layer < static_cast<int32_t>(kSliding.size()); ++layer) {
            const Call& call = kTable.at(onlyNonSliding)[static_cast<size_t>(layer)];
            if (initialized[static_cast<size_t>(call.prefetch)] && onHost[static_cast<size_t>(call.prefetch)]) {
                moves.push_back({step, layer, call.prefetch, TransferDirection::Prefetch});
                onHost[static_cast<size_t>(call.prefetch)] = false;
            }
            initialized[static_cast<size_t>(layer)] = true;
            if (call.offload) {
                moves.push_back({step, layer, layer, TransferDirection::Offload});
                onHost[static_cast<size_t>(layer)] = true;
            }
        }
    }
    return moves;
}

void runSteps(Cache& cache, int64_t steps) {
    for (int64_t step = 0; step < steps; ++step) {
        cache.setStep(step);
        const at::Tensor states = tokens(step == 0 ? 5 : 1, static_cast<float>(step * 10), 2, 4);
        for (int64_t layer = 0; layer < static_cast<int64_t>(cache.size()); ++layer) {
            cache.update(states, states, layer);
        }
        cache.finishStep();
    }
}

class CacheOffloadOrderTest : public ::testing::TestWithParam<bool> {};

TEST_P(CacheOffloadOrderTest, PrefetchTargetsAreTheReferenceTable) {
    const bool onlyNonSliding = GetParam();
    auto cache = tableCache(onlyNonSliding);
    for (int64_t layer = 0; layer < 6; ++layer) {
        EXPECT_EQ(cache->prefetchTarget(layer + 1), kTable.at(onlyNonSliding)[static_cast<size_t>(layer)].prefetch)
            << "update on layer " << layer;
        EXPECT_EQ(cache->offloadsAfterUpdate(layer), kTable.at(onlyNonSliding)[static_cast<size_t>(layer)].offload)
            << "update on layer " << layer;
    }
}

TEST_P(CacheOffloadOrderTest, TransfersThroughUpdateFollowTheReferenceCalls) {
    const bool onlyNonSliding = GetParam();
    auto cache = tableCache(onlyNonSliding);
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    runSteps(*cache, 3);

    // A prefetch belongs to the update whose Update event follows it, an offload to the one before it.
    std::vector<int32_t> nextUpdateOf(sink.size(), -1);
    for (size_t index = sink.size(), next = -1; index-- > 0;) {
        if (sink.events()[index].kind() == trace::EventKind::Update) {
            next = static_cast<size_t>(sink.events()[index].layer);
        }
        nextUpdateOf[index] = static_cast<int32_t>(next);
    }
    std::vector<Move> moves;
    std::map<int32_t, int64_t> bytesAtLastUpdate;
    int32_t lastUpdate = -1;
    for (size_t index = 0; index < sink.size(); ++index) {
        const trace::Event& event = sink.events()[index];
        if (const auto* update = std::get_if<trace::UpdateEvent>(&event.payload)) {
            bytesAtLastUpdate[event.layer] = update->bytes;
            lastUpdate = event.layer;
        }
        const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload);
        if (transfer == nullptr) {
            continue;
        }
        const bool prefetch = transfer->direction == TransferDirection::Prefetch;
        moves.push_back({event.step, prefetch ? nextUpdateOf[index] : lastUpdate, event.layer, transfer->direction});
        EXPECT_EQ(transfer->timing, trace::TimingSource::Modeled);
        EXPECT_EQ(transfer->lane,
                  transfer->direction == TransferDirection::Prefetch ? TransferLane::Prefetch : TransferLane::Compute);
        // A copy moves what the layer held after its last update.
        EXPECT_EQ(transfer->bytes, bytesAtLastUpdate.at(event.layer));
    }
    EXPECT_EQ(moves, referenceMoves(onlyNonSliding, 3));
    EXPECT_TRUE(cache->offloadNotice().empty());
}

TEST_P(CacheOffloadOrderTest, EachPrefetchComesBeforeTheUpdateOfItsLayerInTheSameUpdateCall) {
    // Within one Cache::update: the prefetch of the next layer precedes this layer's Update, and the
    // offload of this layer follows it.
    auto cache = tableCache(GetParam());
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    runSteps(*cache, 2);
    int32_t updating = -1;
    for (const trace::Event& event : sink.events()) {
        if (event.kind() == trace::EventKind::Update) {
            updating = event.layer;
        }
        if (const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload)) {
            if (transfer->direction == TransferDirection::Offload) {
                EXPECT_EQ(event.layer, updating) << "an offload follows the update of its own layer";
            } else {
                EXPECT_NE(event.layer, updating) << "a prefetch precedes the update it belongs to";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(BothPolicies, CacheOffloadOrderTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? std::string("OnlyNonSliding") : std::string("AllLayers");
                         });

TEST(CacheOffloadTest, OffloadedLayersAreReportedOnTheHost) {
    auto cache = tableCache(false);
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    runSteps(*cache, 2);
    // After the last update, every layer was offloaded, and layer 0 was prefetched by the wrap-around.
    EXPECT_FALSE(cache->isOffloaded(0));
    for (size_t layer = 1; layer < 6; ++layer) {
        EXPECT_TRUE(cache->isOffloaded(layer)) << layer;
    }
    const auto totals = eventsOf<trace::MemoryEvent>(sink.events(), -1);
    ASSERT_FALSE(totals.empty());
    int64_t host = 0;
    for (size_t layer = 1; layer < 6; ++layer) {
        host += cache->layer(layer).storedBytes();
    }
    EXPECT_EQ(totals.back().second.host, host);
    EXPECT_EQ(totals.back().second.deviceFullPrecision, cache->layer(0).storedBytes());
}

TEST(CacheOffloadTest, EverySlidingWithOnlyNonSlidingOffloadsNothingAndSaysWhy) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
    layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
    Cache cache(std::move(layers), Offloading::OnlyNonSliding);
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    ::testing::internal::CaptureStderr();
    runSteps(cache, 4);
    const std::string printed = ::testing::internal::GetCapturedStderr();

    EXPECT_TRUE(eventsOf<trace::TransferEvent>(sink.events()).empty());
    EXPECT_NE(cache.offloadNotice().find("every layer"), std::string::npos) << cache.offloadNotice();
    EXPECT_NE(cache.offloadNotice().find("False is not in list"), std::string::npos);
    EXPECT_EQ(printed, "") << "the cache library writes nothing to stderr: callers read offloadNotice()";
    EXPECT_EQ(eventsOf<trace::UpdateEvent>(sink.events()).size(), 8u);
}

TEST(CacheOffloadTest, NoNoticeWhileSomeLayerCanMove) {
    auto cache = tableCache(true);
    runSteps(*cache, 2);
    EXPECT_TRUE(cache->offloadNotice().empty());
}

// ---- The modeled timeline ---------------------------------------------------------------------

struct Timed {
    trace::Event event;
    trace::TransferEvent transfer;
};

// Runs `steps` steps and returns the transfers plus, per Update event index, the modeled compute span.
struct ModeledRun {
    std::vector<Timed> transfers;
    std::vector<std::pair<int32_t, ModeledStreams::Span>> computes; // (layer, span) in update order
    std::vector<trace::Event> events;
};

ModeledRun runModeled(Cache& cache, int64_t steps) {
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    ModeledRun run;
    for (int64_t step = 0; step < steps; ++step) {
        cache.setStep(step);
        const at::Tensor states = tokens(step == 0 ? 64 : 1, 0.0f, 8, 64);
        for (int64_t layer = 0; layer < static_cast<int64_t>(cache.size()); ++layer) {
            cache.update(states, states, layer);
            run.computes.emplace_back(static_cast<int32_t>(layer), cache.modeledStreams().lastCompute());
        }
    }
    for (const auto& [event, transfer] : eventsOf<trace::TransferEvent>(sink.events())) {
        run.transfers.push_back({event, transfer});
    }
    run.events = sink.takeEvents();
    cache.setEventSink(nullptr);
    return run;
}

// [sliding, full] with only_non_sliding: one offloaded layer, whose prefetch can be late.
std::unique_ptr<Cache> twoLayerCache() {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
    layers.push_back(std::make_unique<DynamicLayer>());
    return std::make_unique<Cache>(std::move(layers), Offloading::OnlyNonSliding);
}

enum class Shape { TableAllLayers, TableOnlyNonSliding, TwoLayers };

void PrintTo(Shape shape, std::ostream* out) {
    *out << (shape == Shape::TableAllLayers        ? "table, all layers"
             : shape == Shape::TableOnlyNonSliding ? "table, only non-sliding"
                                                   : "[sliding, full], only non-sliding");
}

class ModeledTimelineTest : public ::testing::TestWithParam<std::tuple<Shape, double, double>> {};

TEST_P(ModeledTimelineTest, KeepsTheDependenciesOfTheDeviceStreams) {
    const auto [shape, bandwidthGBps, computeUs] = GetParam();
    auto cache = shape == Shape::TwoLayers ? twoLayerCache() : tableCache(shape == Shape::TableOnlyNonSliding);
    cache->setTransferModel(TransferModel(bandwidthGBps, 10.0, computeUs));
    const ModeledRun run = runModeled(*cache, 5);
    ASSERT_FALSE(run.transfers.empty());

    // No update of a layer begins before the prefetch that brought it back has ended.
    size_t computeIndex = 0;
    std::map<int32_t, int64_t> lastPrefetchEnd;
    for (const trace::Event& event : run.events) {
        if (const auto* transfer = std::get_if<trace::TransferEvent>(&event.payload)) {
            if (transfer->direction == TransferDirection::Prefetch) {
                lastPrefetchEnd[event.layer] = transfer->endNs;
            }
        } else if (event.kind() == trace::EventKind::Update) {
            const auto& [layer, span] = run.computes[computeIndex++];
            ASSERT_EQ(layer, event.layer);
            if (lastPrefetchEnd.count(layer)) {
                EXPECT_GE(span.beginNs, lastPrefetchEnd[layer]) << "layer " << layer << " step " << event.step;
            }
        }
    }
    ASSERT_EQ(computeIndex, run.computes.size());

    // A prefetch of a layer starts only after that layer's previous offload ended.
    std::map<int32_t, int64_t> lastOffloadEnd;
    for (const Timed& timed : run.transfers) {
        if (timed.transfer.direction == TransferDirection::Offload) {
            lastOffloadEnd[timed.event.layer] = timed.transfer.endNs;
        } else {
            ASSERT_TRUE(lastOffloadEnd.count(timed.event.layer));
            EXPECT_GE(timed.transfer.beginNs, lastOffloadEnd[timed.event.layer]);
        }
    }

    // Nothing on one lane overlaps: prefetches on the prefetch lane; updates and offloads on the compute lane.
    std::vector<ModeledStreams::Span> computeLane;
    std::vector<ModeledStreams::Span> prefetchLane;
    for (const auto& [layer, span] : run.computes) {
        computeLane.push_back(span);
    }
    for (const Timed& timed : run.transfers) {
        EXPECT_GT(timed.transfer.endNs, timed.transfer.beginNs);
        (timed.transfer.lane == TransferLane::Compute ? computeLane : prefetchLane)
            .push_back({timed.transfer.beginNs, timed.transfer.endNs});
    }
    for (auto* lane : {&computeLane, &prefetchLane}) {
        std::sort(lane->begin(), lane->end(), [](const auto& a, const auto& b) { return a.beginNs < b.beginNs; });
        for (size_t index = 1; index < lane->size(); ++index) {
            EXPECT_GE((*lane)[index].beginNs, (*lane)[index - 1].endNs) << "overlap on a lane at " << index;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(ShapesLinksAndComputeCosts, ModeledTimelineTest,
                         ::testing::Combine(::testing::Values(Shape::TableAllLayers, Shape::TableOnlyNonSliding,
                                                              Shape::TwoLayers),
                                            ::testing::Values(25.0, 0.01), ::testing::Values(1.0, 50.0, 1000.0)));

TEST(ModeledTimelineTest, TransferDurationsFollowTheConfiguredModel) {
    auto cache = tableCache(false);
    cache->setTransferModel(TransferModel(10.0, 2.0, 5.0));
    const ModeledRun run = runModeled(*cache, 2);
    ASSERT_FALSE(run.transfers.empty());
    for (const Timed& timed : run.transfers) {
        // 2 us latency + bytes / (10 GB/s) = bytes / 10 ns.
        EXPECT_EQ(timed.transfer.endNs - timed.transfer.beginNs,
                  2000 + static_cast<int64_t>(std::llround(static_cast<double>(timed.transfer.bytes) / 10.0)));
    }
    for (const auto& [layer, span] : run.computes) {
        EXPECT_EQ(span.durationNs(), 5000);
    }
    const ModeledStreams& streams = cache->modeledStreams();
    EXPECT_EQ(streams.computeNs(), 5000 * 12);
    EXPECT_EQ(streams.transferCount(), static_cast<int64_t>(run.transfers.size()));
    int64_t transferNs = 0;
    for (const Timed& timed : run.transfers) {
        transferNs += timed.transfer.endNs - timed.transfer.beginNs;
    }
    EXPECT_EQ(streams.transferNs(), transferNs);
    EXPECT_GE(streams.makespanNs(), streams.computeNs());
}

TEST(ModeledTimelineTest, SlowTransfersBoundTheStep) {
    // With a slow link the run is bound by copies: the compute lane carries every offload (the reference
    // offloads on the default stream), so its length is at least the updates plus those copies.
    auto slow = tableCache(false);
    slow->setTransferModel(TransferModel(0.01, 10.0, 1.0));
    const ModeledRun run = runModeled(*slow, 3);
    int64_t computeLaneCopies = 0;
    for (const Timed& timed : run.transfers) {
        if (timed.transfer.lane == TransferLane::Compute) {
            computeLaneCopies += timed.transfer.endNs - timed.transfer.beginNs;
        }
    }
    const ModeledStreams& streams = slow->modeledStreams();
    EXPECT_GT(streams.makespanNs(), 10 * streams.computeNs());
    EXPECT_GE(streams.computeLaneFreeNs(), streams.computeNs() + computeLaneCopies);

    // With a fast link and costly updates, copies hide behind compute and updates hardly wait.
    auto fast = tableCache(false);
    fast->setTransferModel(TransferModel(1e6, 0.0, 1000.0));
    runModeled(*fast, 3);
    EXPECT_LT(fast->modeledStreams().stallNs(), fast->modeledStreams().computeNs() / 100);
    EXPECT_LT(fast->modeledStreams().makespanNs(), fast->modeledStreams().computeNs() * 101 / 100);
}

TEST(ModeledTimelineTest, AnUpdateWaitsForALatePrefetch) {
    // Only layer 1 of [sliding, full] is offloaded; with a slow link its prefetch (issued while layer 0
    // updates) is still running when layer 1's update comes, so the compute lane stalls.
    const auto owned = twoLayerCache();
    Cache& cache = *owned;
    cache.setTransferModel(TransferModel(0.01, 0.0, 1.0));
    const ModeledRun run = runModeled(cache, 3);
    EXPECT_GT(cache.modeledStreams().stallNs(), 0);
    // The update of layer 1 at step 2 begins exactly when its prefetch ends.
    int64_t prefetchEnd = -1;
    for (const Timed& timed : run.transfers) {
        if (timed.event.step == 2 && timed.transfer.direction == TransferDirection::Prefetch) {
            prefetchEnd = timed.transfer.endNs;
        }
    }
    ASSERT_EQ(run.computes.size(), 6u);
    EXPECT_EQ(run.computes[5].first, 1);
    EXPECT_EQ(run.computes[5].second.beginNs, prefetchEnd);
}

TEST(ModeledTimelineTest, WithoutOffloadingNothingIsModeled) {
    DynamicCache cache;
    const at::Tensor states = tokens(3);
    cache.update(states, states, 0);
    EXPECT_EQ(cache.modeledStreams().transferCount(), 0);
    EXPECT_EQ(cache.modeledStreams().makespanNs(), 0);
}

TEST(ModeledTimelineTest, MeasuredComputeTimeIsUsedWithoutAFixedCost) {
    auto cache = tableCache(false);
    const ModeledRun run = runModeled(*cache, 2);
    for (const auto& [layer, span] : run.computes) {
        EXPECT_GT(span.durationNs(), 0) << "steady_clock wall time of the update";
    }
}

} // namespace
} // namespace kvscope::cache
