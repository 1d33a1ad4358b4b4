// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/WorkloadCatalog.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/InvariantChecker.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Scheduler.h"
#include "kvscope/paged/Workload.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;

namespace {

Scheduler& load(Scheduler& scheduler, const std::string& name) {
    const Workload workload = Workload::load(WorkloadCatalog::resolve(name));
    for (const WorkloadRequest& item : workload.requests) {
        Request request = makeRequest(item.id, item.arrivalStep, item.promptIds, item.maxTokens,
                                      item.ignoreEos, item.cacheSalt);
        scheduler.addRequest(std::move(request));
    }
    return scheduler;
}

} // namespace

TEST(WorkloadCatalogTest, ListsAndParsesEveryBuiltInWorkload) {
    const auto names = WorkloadCatalog::names();
    EXPECT_EQ(names, (std::vector<std::string>{"burst-preemption", "chat-shared-system-prompt",
                                               "prefix-caching-example", "rag-shared-document"}));
    for (const auto& name : names) {
        const Workload workload = Workload::load(WorkloadCatalog::resolve(name));
        EXPECT_FALSE(workload.description.empty()) << name;
        EXPECT_FALSE(workload.requests.empty()) << name;
    }
}

TEST(WorkloadCatalogTest, UnknownNameListsTheBuiltIns) {
    try {
        WorkloadCatalog::resolve("nope");
        FAIL();
    } catch (const PagedError& error) {
        EXPECT_NE(std::string(error.what())
                      .find("built-in workloads are burst-preemption, chat-shared-system-prompt"),
                  std::string::npos)
            << error.what();
    }
}

TEST(WorkloadCatalogTest, PrefixCachingExampleReproducesTheDesignDocument) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 10;
    Scheduler scheduler(config);
    load(scheduler, "prefix-caching-example");
    while (scheduler.hasUnfinishedRequests())
        step(scheduler);
    EXPECT_EQ(scheduler.request("r0").finalBlockTables[0], (std::vector<BlockId>{0, 1, 2, 3, 4}));
    EXPECT_EQ(scheduler.request("r1").finalBlockTables[0], (std::vector<BlockId>{0, 1, 5, 6}));
    EXPECT_EQ(scheduler.request("r1").cachedTokens, 8);
    EXPECT_EQ(scheduler.request("r2").finalBlockTables[0], (std::vector<BlockId>{0, 1, 2, 7, 8, 9, 4, 3}));
    EXPECT_EQ(scheduler.request("r2").cachedTokens, 12);
    EXPECT_EQ(scheduler.stats().evictions, 1);
}

TEST(WorkloadCatalogTest, BurstForcesPreemptionsWithItsSuggestedPool) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 48;
    Scheduler scheduler(config);
    load(scheduler, "burst-preemption");
    while (scheduler.hasUnfinishedRequests()) {
        step(scheduler);
        const auto problems = InvariantChecker::check(scheduler);
        ASSERT_TRUE(problems.empty()) << problems.front();
    }
    EXPECT_GT(scheduler.stats().preemptions, 0);
    for (const Request* request : scheduler.requests())
        EXPECT_EQ(request->outputIds.size(), 48u) << request->id;
}
