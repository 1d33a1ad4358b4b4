// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/Workload.h"

#include "kvscope/paged/PagedError.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;

namespace {

std::string errorOfInWorkload(std::string_view json) {
    try {
        Workload::parse(json, "w.json");
    } catch (const PagedError& error) {
        return error.what();
    }
    return "(parsed)";
}

} // namespace

TEST(WorkloadTest, ParsesEveryFieldWithDefaults) {
    const Workload workload = Workload::parse(R"({"description": "d", "requests": [
        {"id": "a", "prompt": "Hello"},
        {"id": "b", "arrival_step": 3, "prompt_ids": [1, 2, 3], "max_tokens": 5, "ignore_eos": true,
         "cache_salt": "t"}]})");
    EXPECT_EQ(workload.description, "d");
    ASSERT_EQ(workload.requests.size(), 2u);
    const WorkloadRequest& a = workload.requests[0];
    EXPECT_EQ(a.id, "a");
    EXPECT_EQ(a.arrivalStep, 0);
    EXPECT_EQ(a.prompt, std::optional<std::string>("Hello"));
    EXPECT_TRUE(a.promptIds.empty());
    EXPECT_EQ(a.maxTokens, 16);
    EXPECT_FALSE(a.ignoreEos);
    EXPECT_EQ(a.cacheSalt, "");
    const WorkloadRequest& b = workload.requests[1];
    EXPECT_EQ(b.arrivalStep, 3);
    EXPECT_FALSE(b.prompt.has_value());
    EXPECT_EQ(b.promptIds, (std::vector<TokenId>{1, 2, 3}));
    EXPECT_EQ(b.maxTokens, 5);
    EXPECT_TRUE(b.ignoreEos);
    EXPECT_EQ(b.cacheSalt, "t");
}

TEST(WorkloadTest, ReadsTheSuggestedPool) {
    const Workload none = Workload::parse(R"({"requests": [{"id": "a", "prompt": "x"}]})");
    EXPECT_TRUE(none.pool.empty());
    const Workload some =
        Workload::parse(R"({"pool": {"num_blocks": 28}, "requests": [{"id": "a", "prompt": "x"}]})");
    EXPECT_EQ(some.pool, (WorkloadPool{std::nullopt, 28, std::nullopt, std::nullopt}));
    const Workload all = Workload::parse(R"({"pool": {"block_size": 4, "num_blocks": 1048576,
        "max_num_batched_tokens": 8, "max_num_seqs": 4096}, "requests": [{"id": "a", "prompt": "x"}]})");
    EXPECT_EQ(all.pool, (WorkloadPool{4, 1048576, 8, 4096}));
    EXPECT_FALSE(all.pool.empty());
}

TEST(WorkloadTest, ErrorsNameTheProblemTheAllowedValuesAndTheFix) {
    struct Case {
        const char* json;
        const char* expected;
    };
    const Case cases[]{
        {"{", "w.json: is not valid JSON"},
        {"[]", "holds array: a workload is an object"},
        {R"({"requests": []})", "needs \"requests\": a non-empty array"},
        {R"({"requests": [], "extra": 1})",
         "unknown field \"extra\": allowed fields are requests, description, pool"},
        {R"({"pool": 28, "requests": [{"id": "a", "prompt": "x"}]})",
         "w.json: \"pool\" is number: it is the pool the workload suggests, an object such as "
         "{\"num_blocks\": 28}"},
        {R"({"pool": {"blocks": 28}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" has an unknown field \"blocks\": allowed fields are block_size, num_blocks, "
         "max_num_batched_tokens, max_num_seqs"},
        {R"({"pool": {"num_blocks": 0}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"num_blocks\" is 0: it must be an integer from 1 to 1048576, e.g. \"num_blocks\": 28"},
        {R"({"pool": {"num_blocks": 1048577}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"num_blocks\" is 1048577: it must be an integer from 1 to 1048576"},
        {R"({"pool": {"block_size": 4097}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"block_size\" is 4097: it must be an integer from 1 to 4096"},
        {R"({"pool": {"max_num_seqs": -1}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"max_num_seqs\" is -1: it must be an integer from 1 to 4096"},
        {R"({"pool": {"max_num_batched_tokens": 18446744073709551615}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"max_num_batched_tokens\" is 18446744073709551615: it must be an integer from 1 to "
         "1048576"},
        {R"({"pool": {"block_size": 2.5}, "requests": [{"id": "a", "prompt": "x"}]})",
         "\"pool\" \"block_size\" is number: it must be an integer from 1 to 4096, e.g. \"block_size\": 16"},
        {R"({"requests": [3]})", "request 0 is number"},
        {R"({"requests": [{"prompt": "x"}]})", "request 0 needs an \"id\""},
        {R"({"requests": [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}]})",
         "request 'a' appears twice"},
        {R"({"requests": [{"id": "a"}]})", "request 'a' has no prompt: give exactly one"},
        {R"({"requests": [{"id": "a", "prompt": "x", "prompt_ids": [1]}]})",
         "has both \"prompt\" and \"prompt_ids\""},
        {R"({"requests": [{"id": "a", "prompt": ""}]})", "\"prompt\" must be a non-empty string"},
        {R"({"requests": [{"id": "a", "prompt_ids": []}]})", "\"prompt_ids\" must be a non-empty array"},
        {R"({"requests": [{"id": "a", "prompt_ids": [1, -2]}]})",
         "\"prompt_ids\"[1] is -2: token ids are integers"},
        {R"({"requests": [{"id": "a", "prompt_ids": [1.5]}]})", "\"prompt_ids\"[0] is 1.5"},
        {R"({"requests": [{"id": "a", "prompt": "x", "max_tokens": 0}]})",
         "\"max_tokens\" is 0: it must be >= 1"},
        {R"({"requests": [{"id": "a", "prompt": "x", "max_tokens": "4"}]})", "\"max_tokens\" is string"},
        {R"({"requests": [{"id": "a", "prompt": "x", "arrival_step": -1}]})", "\"arrival_step\" is -1"},
        {R"({"requests": [{"id": "a", "prompt": "x", "arrival_step": 18446744073709551615}]})",
         "is too large"},
        {R"({"requests": [{"id": "a", "prompt": "x", "ignore_eos": 1}]})", "\"ignore_eos\" is number"},
        {R"({"requests": [{"id": "a", "prompt": "x", "cache_salt": 1}]})", "\"cache_salt\" is number"},
        {R"({"requests": [{"id": "a", "prompt": "x", "temperature": 1}]})",
         "unknown field \"temperature\": allowed fields are id, arrival_step"},
    };
    for (const Case& c : cases)
        EXPECT_NE(errorOfInWorkload(c.json).find(c.expected), std::string::npos) << c.json << " -> " << errorOfInWorkload(c.json);
}

TEST(WorkloadTest, LoadNamesAMissingFile) {
    try {
        Workload::load("/nonexistent/w.json");
        FAIL();
    } catch (const PagedError& error) {
        EXPECT_NE(std::string(error.what()).find("cannot open workload file /nonexistent/w.json"),
                  std::string::npos);
    }
}
