// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/InvariantChecker.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/Scheduler.h"
#include "kvscope/trace/EventEmitter.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/StateReducer.h"

#include <gtest/gtest.h>
#include <random>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;

namespace {

/// Folds every event, as it is emitted, into a StepState: what `replay` rebuilds from a session.
class ReplaySink final : public kvscope::trace::EventSink {
public:
    void emit(const kvscope::trace::Event& event) override {
        kvscope::trace::StateReducer::apply(m_state, event);
        ++m_count;
    }
    const kvscope::trace::PagedState& paged() const { return m_state.paged; }
    std::size_t count() const { return m_count; }

private:
    kvscope::trace::StepState m_state;
    std::size_t m_count = 0;
};

struct RandomCase {
    PagedConfig config;
    std::vector<Request> requests;
};

/// Random workloads over a few shared prefixes, so that hits, duplicates, evictions and preemptions all
/// happen; a fixed seed keeps the test reproducible.
RandomCase randomCase(std::mt19937& rng, FreePolicy policy, bool hybrid) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    RandomCase c;
    c.config.blockSize = pick(2, 5);
    c.config.numBlocks = pick(12, 40);
    c.config.freePolicy = policy;
    c.config.prefixCaching = pick(0, 4) != 0;
    c.config.maxNumBatchedTokens = pick(4, 40);
    c.config.maxNumSeqs = pick(1, 6);
    if (hybrid)
        c.config.groups = {LayerGroup{GroupKind::Full, 0, {}},
                           LayerGroup{GroupKind::Sliding, pick(2, 12), {}}};
    const std::vector<std::vector<TokenId>> prefixes{tokens(100, 13), tokens(200, 7), tokens(300, 20)};
    const int count = pick(4, 14);
    for (int i = 0; i < count; ++i) {
        std::vector<TokenId> prompt = prefixes[static_cast<std::size_t>(pick(0, 2))];
        prompt.resize(static_cast<std::size_t>(pick(1, static_cast<int>(prompt.size()))));
        prompt = concat(prompt, tokens(1000 + 50 * i, pick(0, 9)));
        const std::string salt = pick(0, 5) == 0 ? "salt" : "";
        // Cap the tokens a request can reach so that it fits the pool alone.
        const std::int64_t perGroup =
            (c.config.numBlocks - 1) / static_cast<std::int64_t>(c.config.groups.size());
        const std::int64_t room = perGroup * c.config.blockSize - static_cast<std::int64_t>(prompt.size());
        if (room < 1)
            prompt.resize(static_cast<std::size_t>(perGroup * c.config.blockSize - 1));
        const std::int64_t maxTokens = std::max<std::int64_t>(1, std::min<std::int64_t>(pick(1, 12), room));
        c.requests.push_back(
            makeRequest("q" + std::to_string(i), pick(0, 12), prompt, maxTokens, pick(0, 3) != 0, salt));
    }
    return c;
}

} // namespace

TEST(InvariantCheckerTest, HoldsAndReplayMatchesAtEveryStepOfRandomWorkloads) {
    std::mt19937 rng(20261222);
    std::int64_t preemptions = 0, evictions = 0, hits = 0, steps = 0;
    for (int round = 0; round < 120; ++round) {
        const FreePolicy policy = round % 2 == 0 ? FreePolicy::Document : FreePolicy::Current;
        RandomCase c = randomCase(rng, policy, round % 3 == 2);
        ReplaySink replay;
        kvscope::trace::EventEmitter emitter(&replay);
        Scheduler scheduler(c.config, &emitter);
        for (auto& request : c.requests)
            scheduler.addRequest(request);
        // eos: a token the fake model emits now and then (5000 + tokens held).
        const TokenId eos = 5000 + 17;
        int guard = 0;
        while (scheduler.hasUnfinishedRequests() && ++guard < 2000) {
            const SchedulerOutput output = scheduler.schedule();
            auto problems = InvariantChecker::check(scheduler);
            ASSERT_TRUE(problems.empty())
                << "round " << round << " step " << output.step << " after schedule: " << problems.front();
            ASSERT_EQ(replay.paged(), scheduler.pagedState()) << "round " << round << " step " << output.step;
            scheduler.update(output, fakeSample(scheduler, output), eos);
            problems = InvariantChecker::check(scheduler);
            ASSERT_TRUE(problems.empty())
                << "round " << round << " step " << output.step << " after update: " << problems.front();
            ASSERT_EQ(replay.paged(), scheduler.pagedState()) << "round " << round << " step " << output.step;
            ++steps;
        }
        ASSERT_FALSE(scheduler.hasUnfinishedRequests()) << "round " << round << " did not finish";
        preemptions += scheduler.stats().preemptions;
        evictions += scheduler.stats().evictions;
        hits += scheduler.stats().hitTokens;
    }
    // The workloads exercise what the invariants are about.
    EXPECT_GT(preemptions, 20);
    EXPECT_GT(evictions, 20);
    EXPECT_GT(hits, 100);
    EXPECT_GT(steps, 1000);
}

TEST(InvariantCheckerTest, ReportsABrokenPool) {
    // A request left holding blocks while another is admitted is fine; a block counted twice is not. The
    // checker reads only the public state, so break it through the one door that allows it: a request
    // that claims computed tokens its table does not cover.
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 8;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("r", 0, tokens(1, 6), 3));
    step(scheduler);
    EXPECT_TRUE(InvariantChecker::check(scheduler).empty());
    const_cast<Request&>(scheduler.request("r")).numComputedTokens = 9;
    const auto problems = InvariantChecker::check(scheduler);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems.front().find("request 'r' has 2 blocks"), std::string::npos) << problems.front();
}
