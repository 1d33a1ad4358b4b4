// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope-cli serve: vLLM's worked example through the command reproduces the document's block tables; a
// workload with shared prefixes, a chunked long prompt and forced preemptions gives every request the
// tokens `kvscope-cli run` gives its prompt alone; refusals name the reason.
#include "kvscope/cli/ServeCommand.h"

#include "ModelTestHelpers.h"
#include "kvscope/cli/RunCommand.h"
#include "kvscope/trace/SessionReader.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

using kvscope::cli::ServeCommand;
using kvscope::cli::ServeOptions;
using kvscope::testing::refusal;

namespace {

/// Serve options for `workload` with the pool's defaults (config::ServingSettings).
ServeOptions serving(const std::string& workload) {
    ServeOptions options;
    options.run.serving.emplace();
    options.run.serving->workload = workload;
    return options;
}

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
    ServeOptions options = serving("prefix-caching-example");
    options.run.preset = "llama";
    options.run.serving->blockSize = 4;
    options.run.serving->numBlocks = 10;
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
        ServeOptions options = serving(path);
        options.run.preset = preset;
        options.run.serving->blockSize = 4;
        options.run.serving->numBlocks = 40;
        options.run.serving->maxNumBatchedTokens = 24;
        options.run.serving->maxNumSeqs = 4;
        const nlohmann::json summary = serve(options);
        EXPECT_GT(summary.at("preemptions").get<int64_t>(), 0) << preset;
        EXPECT_GT(summary.at("prefix_hit_rate").get<double>(), 0.0) << preset;
        if (preset == "llama") {
            // One full-attention group keeps a's blocks cached; gemma3's sliding group frees (and the burst
            // then evicts) the window blocks a hit would need at its end.
            EXPECT_GT(requestOf(summary, "late").at("cached_tokens").get<int64_t>(), 0) << preset;
        }
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
    ServeOptions options = serving("prefix-caching-example");
    options.run.preset = "gemma2";
    options.run.serving->blockSize = 4;
    options.run.serving->numBlocks = 24;
    options.out = (directory.path() / "serve.kvsess").string();
    const nlohmann::json summary = serve(options);
    EXPECT_GT(summary.at("session").at("events").get<int64_t>(), 0);
    const kvscope::trace::SessionContents contents = kvscope::trace::SessionReader::read(options.out);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.metadata.cacheKind, "paged");
    EXPECT_EQ(contents.intactSteps, summary.at("steps").get<int64_t>());
}

TEST(ServeCommandTest, RefusesWhatIsNotPagedWithTheReason) {
    ServeOptions options = serving("prefix-caching-example");
    options.run.cache.kind = kvscope::config::CacheKind::Quantized;
    EXPECT_NE(refusal([&] { serve(options); }).find("quantized caches are not paged"), std::string::npos);
    options.run.cache.kind = kvscope::config::CacheKind::Dynamic;
    options.run.press.name = "snapkv";
    EXPECT_NE(refusal([&] { serve(options); }).find("presses are not paged"), std::string::npos);
    options.run.press.name.clear();
    options.run.preset = "whisper";
    EXPECT_NE(refusal([&] { serve(options); }).find("encoder-decoder"), std::string::npos);
    options.run.preset = "llama";
    options.run.serving->workload = "no-such-workload";
    EXPECT_NE(refusal([&] { serve(options); }).find("no-such-workload"), std::string::npos);
}

// Compare mode: the design document's example served twice, with prefix caching and without, under a budget
// of 8 tokens a step. Worked by hand (docs/paged.md): with caching r0 prefills in steps 0-1 and decodes to
// step 4; r1 (arriving at 4) reuses 8 tokens and computes 6 in step 4; r2 (arriving at 5) reuses 12 and
// computes 17 over steps 5-7: 8 steps, 20 of 58 prompt tokens hit, block 3 evicted, r2's 8 blocks at the
// peak. Without, r1 computes 14 over steps 4-5, r2 takes the last budget token of step 5 and 28 more over
// steps 6-9: 10 steps, no hit, nothing cached so nothing evicted.
TEST(ServeCommandTest, ComparesTheWorkloadWithoutPrefixCachingSideBySide) {
    kvscope::testing::TemporaryDirectory directory("serve-compare");
    ServeOptions options = serving("prefix-caching-example");
    options.run.preset = "llama";
    options.run.serving->blockSize = 4;
    options.run.serving->numBlocks = 10;
    options.run.serving->maxNumBatchedTokens = 8;
    options.compare = "prefix-caching=off";
    options.out = (directory.path() / "example.kvsess").string();
    const nlohmann::json summary = serve(options);
    const nlohmann::json& sides = summary.at("side_by_side");
    EXPECT_EQ(sides.at("steps"), nlohmann::json::parse("[8, 10]"));
    EXPECT_EQ(sides.at("hit_tokens"), nlohmann::json::parse("[20, 0]"));
    EXPECT_EQ(sides.at("query_tokens"), nlohmann::json::parse("[58, 58]"));
    EXPECT_DOUBLE_EQ(sides.at("prefix_hit_rate")[0].get<double>(), 20.0 / 58.0);
    EXPECT_DOUBLE_EQ(sides.at("prefix_hit_rate")[1].get<double>(), 0.0);
    EXPECT_EQ(sides.at("evictions"), nlohmann::json::parse("[1, 0]"));
    EXPECT_EQ(sides.at("preemptions"), nlohmann::json::parse("[0, 0]"));
    EXPECT_EQ(sides.at("peak_blocks_used"), nlohmann::json::parse("[8, 8]"));
    EXPECT_EQ(summary.at("compared_label"), "prefix caching off");
    EXPECT_EQ(summary.at("baseline").at("paged").at("prefix_caching"), true);
    EXPECT_EQ(summary.at("compared").at("paged").at("prefix_caching"), false);
    // The same tokens either way: caching changes what is computed, never what is produced.
    for (const char* id : {"r0", "r1", "r2"}) {
        EXPECT_EQ(requestOf(summary.at("baseline"), id).at("output_ids"),
                  requestOf(summary.at("compared"), id).at("output_ids"))
            << id;
    }
    // Both runs recorded: the second beside the first.
    EXPECT_EQ(ServeCommand::comparedPath(options.out),
              (directory.path() / "example.compared.kvsess").string());
    EXPECT_EQ(kvscope::trace::SessionReader::read(options.out).intactSteps, 8);
    EXPECT_EQ(kvscope::trace::SessionReader::read(ServeCommand::comparedPath(options.out)).intactSteps, 10);
    // A change that cannot be read is refused before anything runs.
    options.compare = "pool=3";
    EXPECT_NE(refusal([&] { serve(options); }).find("unknown setting `pool` to change"), std::string::npos);
}

// With no pool option, `serve --workload NAME` takes the pool the workload suggests (its file's "pool"); each
// option given wins over it; --compare-serving's changes apply to the suggested pool in run().
TEST(ServeCommandTest, AWorkloadBringsItsSuggestedPoolWhereNoneIsGiven) {
    struct Case {
        std::vector<const char*> arguments;
        kvscope::config::ServingSettings expected;
    };
    const Case cases[] = {
        {{"--workload", "chat-shared-system-prompt"},
         {"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}},
        {{"--workload", "chat-shared-system-prompt", "--num-blocks", "64"},
         {"chat-shared-system-prompt", 16, 64, 256, 8, true, "document"}},
        {{"--workload", "burst-preemption", "--block-size", "8", "--compare-serving", "num-blocks=96"},
         {"burst-preemption", 8, 48, 256, 8, true, "document"}},
    };
    for (const Case& c : cases) {
        CLI::App app;
        ServeOptions options;
        CLI::App* serve = ServeCommand::addSubcommand(app, options);
        std::vector<const char*> argv{"kvscope-cli", "serve"};
        argv.insert(argv.end(), c.arguments.begin(), c.arguments.end());
        app.parse(static_cast<int>(argv.size()), argv.data());
        ASSERT_TRUE(serve->parsed());
        ASSERT_TRUE(options.run.serving.has_value());
        EXPECT_EQ(*options.run.serving, c.expected) << c.arguments.front() << " " << c.arguments[1];
    }
}
