// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/RunCommand.h"

#include "TokenizerTestJson.h"
#include "kvscope/runtime/LiveSession.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionReader.h"

#include <fstream>

#include "kvscope/model/ModelLoader.h"

#include "ModelTestHelpers.h"
#include "SafetensorsTestWriter.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

using kvscope::cli::RunCommand;
using kvscope::cli::RunOptions;

namespace {

RunOptions quick(const std::string& preset, const std::string& cache = "dynamic") {
    RunOptions options;
    options.run.preset = preset;
    options.run.cache.kind = kvscope::config::cacheKindFromString(cache).value();
    options.run.tokens = 6;
    options.check = true;
    return options;
}

} // namespace

using kvscope::testing::refusal;

TEST(RunCommandTest, SummaryHasTokensBytesTimingsAndTheCheck) {
    std::ostringstream progress;
    const nlohmann::json summary = RunCommand::run(quick("gemma3"), progress);
    EXPECT_EQ(summary.at("new_tokens"), 6);
    EXPECT_EQ(summary.at("tokens").size(), 6u);
    EXPECT_TRUE(summary.at("text").is_string());
    EXPECT_EQ(summary.at("model").at("source").at("preset"), "gemma3");
    EXPECT_EQ(summary.at("cache").at("type"), "DynamicCache");
    EXPECT_GT(summary.at("cache").at("bytes_by_layer_type").at("DynamicSlidingWindowLayer").get<int64_t>(), 0);
    EXPECT_GT(summary.at("cache").at("bytes_by_layer_type").at("DynamicLayer").get<int64_t>(), 0);
    EXPECT_GT(summary.at("tokens_per_second").get<double>(), 0.0);
    EXPECT_EQ(summary.at("timings").at("decode_steps"), 5);
    EXPECT_LE(summary.at("max_abs_logit_diff").get<double>(), 1e-4);
    EXPECT_TRUE(summary.at("check_passed").get<bool>());
    EXPECT_NE(progress.str().find("6/6 tokens"), std::string::npos) << progress.str();
}

TEST(RunCommandTest, CacheKindsShowTheirOwnLayers) {
    std::ostringstream progress;
    RunOptions quantized = quick("llama", "quantized");
    quantized.run.cache.nbits = 8;
    quantized.run.cache.residualLength = 3;
    nlohmann::json summary = RunCommand::run(quantized, progress);
    EXPECT_EQ(summary.at("cache").at("type"), "QuantizedCache");
    EXPECT_GT(summary.at("cache").at("quantized_bytes").get<int64_t>(), 0);
    EXPECT_EQ(summary.at("cache").at("quantization").at("group"), 16); // the head dim
    EXPECT_TRUE(summary.at("check_passed").get<bool>());

    summary = RunCommand::run(quick("whisper", "static"), progress);
    EXPECT_EQ(summary.at("cache").at("type"), "StaticCache");
    EXPECT_EQ(summary.at("cache").at("cross_attention").at("type"), "StaticCache");

    RunOptions beams = quick("qwen3-next");
    beams.run.beams = 2;
    summary = RunCommand::run(beams, progress);
    EXPECT_EQ(summary.at("beam_scores").size(), 2u);
    EXPECT_GT(summary.at("cache").at("bytes_by_layer_type").at("LinearAttentionLayer").get<int64_t>(), 0);
}

TEST(RunCommandTest, RunsACheckpointAndAConfig) {
    kvscope::testing::TemporaryDirectory directory("kvscope-run");
    const nlohmann::json config = {{"model_type", "qwen2"}, {"hidden_size", 32}, {"num_hidden_layers", 2},
                                   {"num_attention_heads", 2}, {"intermediate_size", 48}, {"vocab_size", 300}};
    auto model = kvscope::model::ModelLoader::builtin(kvscope::config::ModelConfig::fromJson(config));
    kvscope::testing::SafetensorsTestWriter::writeCheckpoint(directory.path() / "ckpt", config,
                                                            model->parameters().tensors(), at::kBFloat16);
    RunOptions options = quick("");
    options.run.checkpointDir = (directory.path() / "ckpt").string();
    std::ostringstream progress;
    nlohmann::json summary = RunCommand::run(options, progress);
    EXPECT_EQ(summary.at("model").at("model_type"), "qwen2");
    EXPECT_TRUE(summary.at("check_passed").get<bool>());

    options = quick("");
    options.run.configPath = (directory.path() / "ckpt" / "config.json").string();
    options.progress = false;
    summary = RunCommand::run(options, progress);
    EXPECT_EQ(summary.at("model").at("source").at("config"), options.run.configPath);
}

TEST(RunCommandTest, ACheckpointSpeaksThroughItsOwnTokenizer) {
    kvscope::testing::TemporaryDirectory directory("kvscope-run-text");
    const auto writeCheckpoint = [&](const std::string& name, int64_t vocabulary) {
        const nlohmann::json config = {{"model_type", "qwen2"},       {"hidden_size", 32},
                                       {"num_hidden_layers", 2},       {"num_attention_heads", 2},
                                       {"intermediate_size", 48},      {"vocab_size", vocabulary}};
        auto model = kvscope::model::ModelLoader::builtin(kvscope::config::ModelConfig::fromJson(config));
        const auto folder = directory.path() / name;
        kvscope::testing::SafetensorsTestWriter::writeCheckpoint(folder, config, model->parameters().tensors(),
                                                                at::kFloat);
        std::ofstream(folder / "tokenizer.json")
            << kvscope::tokenizer::testing::TokenizerTestJson::byteLevel({"h e", "l l", "he ll"}).dump();
        std::ofstream(folder / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
        return folder.string();
    };
    RunOptions options = quick("");
    options.run.checkpointDir = writeCheckpoint("fits", 1024); // the tokenizer's ids go up to 1000
    options.run.prompt = "hello hello";
    options.run.ignoreEos = true;
    options.out = (directory.path() / "text.kvsess").string();
    options.progress = false;
    std::ostringstream progress;
    const nlohmann::json summary = RunCommand::run(options, progress);
    EXPECT_EQ(summary.at("tokenizer"), options.run.checkpointDir);
    EXPECT_EQ(summary.at("new_tokens"), 6) << "--ignore-eos generates every token";
    ASSERT_EQ(summary.at("pieces").size(), 6u);
    // The prompt went through the tokenizer: its pieces (recorded in the session) spell it, merged.
    const auto contents = kvscope::trace::SessionReader::read(options.out);
    const std::vector<std::string>& pieces = contents.metadata.promptPieces;
    EXPECT_EQ(contents.metadata.tokenizer, options.run.checkpointDir);
    std::string spelled;
    for (const std::string& piece : pieces) {
        spelled += piece;
    }
    EXPECT_EQ(spelled, "hello hello");
    EXPECT_LT(pieces.size(), std::string("hello hello").size()) << "merges joined bytes into tokens";
    EXPECT_EQ(pieces.front(), "hell");

    options = quick("");
    options.run.checkpointDir = writeCheckpoint("small", 300);
    const std::string refused = refusal([&] { RunCommand::run(options, progress); });
    EXPECT_NE(refused.find("1001 ids but the model's vocabulary has 300"), std::string::npos) << refused;
}

TEST(RunCommandTest, EveryCheckpointFamilySpeaksThroughItsTokenizer) {
    // A checkpoint of each family, under its Hugging Face tensor names, with a tokenizer beside it:
    // `run --checkpoint` encodes through the tokenizer's merges and prints text decoded by it.
    kvscope::testing::TemporaryDirectory directory("kvscope-run-families");
    const std::vector<nlohmann::json> families = {
        {{"model_type", "llama"}, {"tie_word_embeddings", true},
         {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}},
        {{"model_type", "mistral"}, {"sliding_window", 4}, {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}},
        {{"model_type", "qwen2"}, {"use_sliding_window", false}},
        {{"model_type", "qwen3"}, {"head_dim", 16}},
        {{"model_type", "gemma"}, {"head_dim", 16}, {"hidden_activation", "gelu_pytorch_tanh"}},
        {{"model_type", "gemma2"}, {"head_dim", 16}, {"sliding_window", 4}, {"query_pre_attn_scalar", 16},
         {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0}},
        {{"model_type", "gemma3_text"}, {"head_dim", 16}, {"sliding_window", 4}, {"sliding_window_pattern", 2},
         {"query_pre_attn_scalar", 16}, {"rope_local_base_freq", 100.0}},
        {{"model_type", "phi3"}, {"partial_rotary_factor", 0.5}},
    };
    for (nlohmann::json config : families) {
        const std::string family = config.at("model_type");
        SCOPED_TRACE(family);
        config.update({{"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                       {"num_key_value_heads", 1}, {"intermediate_size", 48}, {"vocab_size", 1024}});
        auto model = kvscope::model::ModelLoader::builtin(kvscope::config::ModelConfig::fromJson(config));
        const auto folder = directory.path() / family;
        kvscope::testing::SafetensorsTestWriter::writeCheckpoint(folder, config, model->parameters().tensors(),
                                                                at::kFloat);
        std::ofstream(folder / "tokenizer.json")
            << kvscope::tokenizer::testing::TokenizerTestJson::byteLevel({"h e", "l l", "he ll"}).dump();
        RunOptions options = quick("");
        options.run.checkpointDir = folder.string();
        options.run.prompt = "hello hello";
        options.run.ignoreEos = true;
        options.progress = false;
        std::ostringstream progress;
        const nlohmann::json summary = RunCommand::run(options, progress);
        EXPECT_EQ(summary.at("model").at("model_type"), family);
        EXPECT_EQ(summary.at("tokenizer"), options.run.checkpointDir);
        // 'hell', 'o', 'Ġ', 'hell', 'o': merged by the tokenizer (no merge joins 'Ġ' and 'h'), no bos; not 11 bytes.
        EXPECT_EQ(summary.at("prompt_tokens"), 5u);
        EXPECT_TRUE(summary.at("check_passed").get<bool>());
        EXPECT_EQ(summary.at("new_tokens"), 6u);
        EXPECT_EQ(summary.at("pieces").size(), 6u);
        EXPECT_FALSE(summary.at("text").get<std::string>().empty());
    }
}

TEST(RunCommandTest, ATokenizerPairsWithAPresetOrAConfigOfItsVocabulary) {
    kvscope::testing::TemporaryDirectory directory("kvscope-run-tokenizer");
    const auto tokenizerFile = directory.path() / "tokenizer.json";
    std::ofstream(tokenizerFile)
        << kvscope::tokenizer::testing::TokenizerTestJson::byteLevel({"h e", "l l", "he ll"}).dump();
    const auto configFile = directory.path() / "config.json";
    std::ofstream(configFile) << nlohmann::json{{"model_type", "qwen2"},       {"hidden_size", 32},
                                                {"num_hidden_layers", 2},       {"num_attention_heads", 2},
                                                {"intermediate_size", 48},      {"vocab_size", 1001}}
                                     .dump();
    RunOptions options = quick("");
    options.run.configPath = configFile.string();
    options.run.tokenizerPath = tokenizerFile.string();
    options.run.prompt = "hello hello";
    options.check = false;
    options.progress = false;
    options.out = (directory.path() / "paired.kvsess").string();
    std::ostringstream progress;
    const nlohmann::json summary = RunCommand::run(options, progress);
    EXPECT_EQ(summary.at("tokenizer"), options.run.tokenizerPath);
    EXPECT_EQ(summary.at("model").at("source").at("tokenizer"), options.run.tokenizerPath);
    EXPECT_LT(summary.at("prompt_tokens").get<std::size_t>(), std::string("hello hello").size())
        << "the prompt went through the tokenizer's merges, not one token per byte";
    const auto contents = kvscope::trace::SessionReader::read(options.out);
    EXPECT_EQ(contents.metadata.tokenizer, options.run.tokenizerPath);
    ASSERT_FALSE(contents.metadata.promptPieces.empty());
    EXPECT_EQ(contents.metadata.promptPieces.front(), "hell");

    // A preset has 259 ids (bytes and three specials): the tokenizer's 1001 do not fit, and both sizes are said.
    options = quick("llama");
    options.run.tokenizerPath = directory.path().string(); // a folder with tokenizer.json
    const std::string refused = refusal([&] { RunCommand::run(options, progress); });
    EXPECT_NE(refused.find("has 1001 ids but the model's vocabulary has 259"), std::string::npos) << refused;

    options.run.tokenizerPath = (directory.path() / "missing").string();
    EXPECT_NE(refusal([&] { RunCommand::run(options, progress); }).find("missing"), std::string::npos);
}

TEST(RunCommandTest, RefusesWhatItCannotDo) {
    std::ostringstream sink;
    RunOptions options = quick("llama");
    options.out = "/nonexistent-folder/session.kvsess";
    EXPECT_NE(refusal([&] { RunCommand::run(options, sink); })
                  .find("cannot create session file /nonexistent-folder/session.kvsess"),
              std::string::npos);
    options = quick("llama");
    options.run.configPath = "x.json";
    EXPECT_NE(refusal([&] { RunCommand::run(options, sink); }).find("one model source"), std::string::npos);
    options = quick("nope");
    EXPECT_NE(refusal([&] { RunCommand::run(options, sink); }).find("unknown preset"), std::string::npos);
    if (!at::hasCUDA()) {
        options = quick("llama");
        options.run.device = kvscope::config::ComputeDevice::Cuda;
        EXPECT_NE(refusal([&] { RunCommand::run(options, sink); }).find("allowed here: cpu"), std::string::npos);
    }
}

TEST(RunCommandTest, AdaKvMasksPerHeadAndTheCheckIsRefusedWithAPress) {
    std::ostringstream progress;
    RunOptions options = quick("llama");
    options.check = false;
    options.run.press.name = "adakv";
    options.run.press.ratio = 0.5;
    options.pressOptions = {"base=snapkv", "window_size=4"};
    const nlohmann::json summary = RunCommand::run(options, progress);
    const int64_t prompt = summary.at("prompt_tokens").get<int64_t>();
    const nlohmann::json& compressions = summary.at("press").at("compressions");
    ASSERT_EQ(compressions.size(), 4u); // every layer, after the prefill
    for (const nlohmann::json& compression : compressions) {
        // The cache keeps its length; the two KV heads mask prompt - int(prompt / 2) slots each on average.
        EXPECT_EQ(compression.at("before"), compression.at("after"));
        const auto masked = compression.at("masked_per_head").get<std::vector<int64_t>>();
        ASSERT_EQ(masked.size(), 2u);
        EXPECT_EQ(masked[0] + masked[1], 2 * (prompt - prompt / 2));
    }
    EXPECT_EQ(summary.at("new_tokens"), 6);

    options.check = true;
    EXPECT_NE(refusal([&] {
                  RunCommand::run(options, progress);
              }).find("--check compares with a cache-free recompute"),
              std::string::npos);
    options.run.press.name = "h2o";
    options.run.press.ratio = 0.0;
    options.pressOptions = {};
    EXPECT_NE(refusal([&] { RunCommand::run(options, progress); }).find("the check cannot hold"),
              std::string::npos);
    // A prefill press at ratio 0 changes nothing, so the check holds.
    options.run.press.name = "adakv";
    EXPECT_TRUE(RunCommand::run(options, progress).at("check_passed").get<bool>());
}

TEST(RunCommandTest, ParsesTheCommandLine) {
    CLI::App app;
    RunOptions options;
    CLI::App* run = RunCommand::addSubcommand(app, options);
    const char* argv[] = {"kvscope-cli", "run",      "--preset", "mistral", "--cache", "quantized", "--backend",
                          "hqq",         "--nbits",  "2",        "--group", "8",       "--residual", "16",
                          "--tokens",    "3",        "--beams",  "2",       "--seed",  "7",         "--check",
                          "--no-progress", "--prompt", "hi"};
    app.parse(static_cast<int>(std::size(argv)), argv);
    EXPECT_TRUE(run->parsed());
    EXPECT_EQ(options.run.preset, "mistral");
    EXPECT_EQ(options.run.cache.kind, kvscope::config::CacheKind::Quantized);
    EXPECT_EQ(options.run.cache.backend, kvscope::config::QuantizerBackend::Hqq);
    EXPECT_EQ(options.run.cache.nbits, 2);
    EXPECT_EQ(options.run.cache.groupSize, 8);
    EXPECT_EQ(options.run.cache.residualLength, 16);
    EXPECT_EQ(options.run.tokens, 3);
    EXPECT_EQ(options.run.beams, 2);
    EXPECT_EQ(options.run.seed, 7u);
    EXPECT_TRUE(options.check);
    EXPECT_FALSE(options.progress);
    EXPECT_EQ(options.run.prompt, "hi");
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(RunCommand::execute(options, out, err), 0);
    EXPECT_EQ(nlohmann::json::parse(out.str()).at("new_tokens"), 3);

    CLI::App other;
    RunOptions clash;
    RunCommand::addSubcommand(other, clash);
    const char* both[] = {"kvscope-cli", "run", "--preset", "llama", "--checkpoint", "dir"};
    EXPECT_THROW(other.parse(6, both), CLI::ParseError);

    CLI::App paired;
    RunOptions withTokenizer;
    RunCommand::addSubcommand(paired, withTokenizer);
    const char* tokenizer[] = {"kvscope-cli", "run", "--config", "c.json", "--tokenizer", "tok"};
    paired.parse(6, tokenizer);
    EXPECT_EQ(withTokenizer.run.tokenizerPath, "tok");
    CLI::App clashing;
    RunOptions clashingOptions;
    RunCommand::addSubcommand(clashing, clashingOptions);
    const char* ownTokenizer[] = {"kvscope-cli", "run", "--checkpoint", "dir", "--tokenizer", "tok"};
    EXPECT_THROW(clashing.parse(6, ownTokenizer), CLI::ParseError) << "a checkpoint brings its own tokenizer";
}

TEST(RunCommandTest, APressRunsAsInALiveSessionAndIsRecordedAlike) {
    kvscope::testing::TemporaryDirectory directory("kvscope-run-press");
    RunOptions options = quick("llama");
    options.check = false;
    options.progress = false;
    options.run.tokens = 3;
    options.run.press.name = "snapkv";
    options.run.press.ratio = 0.5;
    options.pressOptions = {"window_size=4"};
    options.out = (directory.path() / "pressed.kvsess").string();
    std::ostringstream progress;
    const nlohmann::json summary = RunCommand::run(options, progress);
    EXPECT_EQ(summary.at("press").at("options").at("window_size"), "4");

    // The GUI's live session over the same settings: one hook factory, one metadata record.
    kvscope::config::RunSettings live = options.run;
    live.press = RunCommand::pressSettings(options);
    kvscope::runtime::LiveSession session(live);
    kvscope::trace::RecordingSink sink;
    session.start(sink);
    while (session.step()) {
    }
    const auto compressionsOf = [](const std::vector<kvscope::trace::Event>& events) {
        std::vector<kvscope::trace::Event> compressions;
        for (const kvscope::trace::Event& event : events) {
            if (event.kind() == kvscope::trace::EventKind::Compression) {
                compressions.push_back(event);
            }
        }
        return compressions;
    };
    const kvscope::trace::SessionContents recorded = kvscope::trace::SessionReader::read(options.out);
    const auto fromCli = compressionsOf(recorded.events);
    ASSERT_FALSE(fromCli.empty());
    ASSERT_EQ(fromCli.size(), compressionsOf(sink.events()).size());
    for (std::size_t index = 0; index < fromCli.size(); ++index) {
        EXPECT_EQ(fromCli[index].payload, compressionsOf(sink.events())[index].payload) << index;
    }
    const nlohmann::json cliPress = nlohmann::json::parse(recorded.metadata.cacheSettingsJson).at("press");
    const nlohmann::json livePress = nlohmann::json::parse(session.metadata().cacheSettingsJson).at("press");
    EXPECT_EQ(cliPress, livePress);
    EXPECT_EQ(livePress.at("name"), "snapkv");
    EXPECT_EQ(livePress.at("options").at("window_size"), "4");
}

TEST(RunCommandTest, PressSettingsAreRefusedNamingWhatIsAllowed) {
    RunOptions options = quick("llama");
    options.run.press.ratio = 0.5;
    EXPECT_NE(refusal([&] { std::ostringstream progress; RunCommand::run(options, progress); })
                  .find("need a press (allowed: streaming_llm"),
              std::string::npos);
    options.run.press.name = "snapkv";
    options.pressOptions = {"window"};
    EXPECT_NE(refusal([&] { std::ostringstream progress; RunCommand::run(options, progress); })
                  .find("--press-option `window`: expected key=value"),
              std::string::npos);
    options.pressOptions = {"window=4"};
    EXPECT_NE(refusal([&] { std::ostringstream progress; RunCommand::run(options, progress); })
                  .find("press snapkv has no option `window` (allowed: window_size, kernel_size)"),
              std::string::npos);
}
