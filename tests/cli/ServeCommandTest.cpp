// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope-cli serve: vLLM's worked example through the command reproduces the document's block tables; a
// workload with shared prefixes, a chunked long prompt and forced preemptions gives every request the
// tokens `kvscope-cli run` gives its prompt alone; refusals name the reason.
#include "kvscope/cli/ServeCommand.h"

#include "ModelTestHelpers.h"
#include "kvscope/cli/RunCommand.h"
#include "kvscope/trace/SessionReader.h"

#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

using kvscope::cli::ServeCommand;
using kvscope::cli::ServeOptions;
using kvscope::testing::refusal;

namespace {

nlohmann::json serve(const ServeOptions& options) {
    std::ostringstream progress;
    return ServeCommand::run(options, progress);
}

const nlohmann::json& requestOf(const nlohmann::json& summary, const std::string& id) {
    for (const nlohmann::json& request : summary.at("requests")) {
        if (request.at("id") == id) {
            return request;
        }
    }
    throw std::runtime_error("no request " + id);
}

} // namespace

TEST(ServeCommandTest, TheDesignDocumentsWorkedExampleReproducesItsTables) {
    ServeOptions options;
    options.workload = "WORKED_EXAMPLE";
    options.run.preset = "llama";
    options.paged.blockSize = 4;
    options.paged.numBlocks = 10;
    const nlohmann::json summary = serve(options);
    EXPECT_EQ(requestOf(summary, "r0").at("block_table"), nlohmann::json::parse("[[0, 1, 2, 3, 4]]"));
    EXPECT_EQ(requestOf(summary, "r1").at("block_table"), nlohmann::json::parse("[[0, 1, 5, 6]]"));
    EXPECT_EQ(requestOf(summary, "r1").at("cached_tokens"), 8);
    EXPECT_EQ(requestOf(summary, "r2").at("block_table"),
              nlohmann::json::parse("[[0, 1, 2, 7, 8, 9, 4, 3]]"));
    EXPECT_EQ(requestOf(summary, "r2").at("cached_tokens"), 12);
    EXPECT_EQ(summary.at("evictions"), 1); // block 3
    EXPECT_EQ(summary.at("preemptions"), 0);
}

TEST(ServeCommandTest, EveryRequestGetsTheTokensOfItsSoloRun) {
    kvscope::testing::TemporaryDirectory directory("serve-mixed");
    const std::string system = "You are kvscope, a helpful tutor who explains caches. ";
    const nlohmann::json workload = {
        {"description", "shared prefixes, a chunked long prompt, a burst that preempts"},
        {"requests",
         {{{"id", "a"},
           {"arrival_step", 0},
           {"prompt", system + "What is a block?"},
           {"max_tokens", 8},
           {"ignore_eos", true}},
          {{"id", "b"},
           {"arrival_step", 0},
           {"prompt", system + "Why hash blocks?"},
           {"max_tokens", 8},
           {"ignore_eos", true}},
          {{"id", "long"},
           {"arrival_step", 1},
           {"prompt", system + "Read this long passage about paged attention, then answer briefly."},
           {"max_tokens", 6},
           {"ignore_eos", true}},
          {{"id", "burst-1"},
           {"arrival_step", 2},
           {"prompt", "A burst of new work arrives now"},
           {"max_tokens", 10},
           {"ignore_eos", true}},
          {{"id", "burst-2"},
           {"arrival_step", 2},
           {"prompt", "Another burst of work arrives"},
           {"max_tokens", 10},
           {"ignore_eos", true}},
          {{"id", "late"},
           {"arrival_step", 12},
           {"prompt", system + "What is a block?"},
           {"max_tokens", 5},
           {"ignore_eos", true}}}}};
    const std::string path = (directory.path() / "mixed.json").string();
    std::ofstream(path) << workload.dump(2);

    for (const std::string& preset : {"llama", "gemma3"}) {
        ServeOptions options;
        options.workload = path;
        options.run.preset = preset;
        options.paged.blockSize = 4;
        options.paged.numBlocks = 40;
        options.paged.maxNumBatchedTokens = 24;
        options.paged.maxNumSeqs = 4;
        const nlohmann::json summary = serve(options);
        EXPECT_GT(summary.at("preemptions").get<int64_t>(), 0) << preset;
        EXPECT_GT(summary.at("prefix_hit_rate").get<double>(), 0.0) << preset;
        EXPECT_GT(requestOf(summary, "late").at("cached_tokens").get<int64_t>(), 0) << preset;
        EXPECT_GT(requestOf(summary, "long").at("prompt_tokens").get<int64_t>(), 24) << preset; // chunked
        for (const nlohmann::json& request : workload.at("requests")) {
            kvscope::cli::RunOptions solo;
            solo.run.preset = preset;
            solo.run.prompt = request.at("prompt").get<std::string>();
            solo.run.tokens = request.at("max_tokens").get<int64_t>();
            solo.run.ignoreEos = true;
            solo.progress = false;
            std::ostringstream progress;
            const nlohmann::json alone = kvscope::cli::RunCommand::run(solo, progress);
            const nlohmann::json& served = requestOf(summary, request.at("id").get<std::string>());
            EXPECT_EQ(served.at("output_ids"), alone.at("tokens")) << preset << " " << request.at("id");
            EXPECT_EQ(served.at("text"), alone.at("text")) << preset << " " << request.at("id");
        }
    }
}

TEST(ServeCommandTest, RecordsASessionThatReads) {
    kvscope::testing::TemporaryDirectory directory("serve-session");
    ServeOptions options;
    options.workload = "WORKED_EXAMPLE";
    options.run.preset = "gemma2";
    options.paged.blockSize = 4;
    options.paged.numBlocks = 24;
    options.out = (directory.path() / "serve.kvsess").string();
    const nlohmann::json summary = serve(options);
    EXPECT_GT(summary.at("session").at("events").get<int64_t>(), 0);
    const kvscope::trace::SessionContents contents = kvscope::trace::SessionReader::read(options.out);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.metadata.cacheKind, "paged");
    EXPECT_EQ(contents.intactSteps, summary.at("steps").get<int64_t>());
}

TEST(ServeCommandTest, RefusesWhatIsNotPagedWithTheReason) {
    ServeOptions options;
    options.workload = "WORKED_EXAMPLE";
    options.run.cache.kind = kvscope::config::CacheKind::Quantized;
    EXPECT_NE(refusal([&] { serve(options); }).find("quantized caches are not paged"), std::string::npos);
    options.run.cache.kind = kvscope::config::CacheKind::Dynamic;
    options.run.press.name = "snapkv";
    EXPECT_NE(refusal([&] { serve(options); }).find("presses are not paged"), std::string::npos);
    options.run.press.name.clear();
    options.run.preset = "whisper";
    EXPECT_NE(refusal([&] { serve(options); }).find("encoder-decoder"), std::string::npos);
    options.run.preset = "llama";
    options.workload = "no-such-workload";
    EXPECT_NE(refusal([&] { serve(options); }).find("no-such-workload"), std::string::npos);
}
