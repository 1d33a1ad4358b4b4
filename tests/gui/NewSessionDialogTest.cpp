// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/NewSessionDialog.h"

#include <QApplication>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilities(bool cuda) {
    EngineCapabilities result;
    result.presets = {"gemma3", "llama", "mistral"};
    result.defaultPreset = "llama";
    result.cudaAvailable = cuda;
    return result;
}

TEST(NewSessionDialogTest, RoundTripsSettings) {
    kvscope::config::RunSettings settings;
    settings.preset = "gemma3";
    settings.cache.kind = kvscope::config::CacheKind::Quantized;
    settings.cache.backend = kvscope::config::QuantizerBackend::Hqq;
    settings.cache.nbits = 2;
    settings.cache.residualLength = 16;
    settings.prompt = "hello";
    settings.tokens = 77;
    settings.seed = 5;
    NewSessionDialog dialog(capabilities(false), settings);
    EXPECT_EQ(dialog.settings(), settings);
    EXPECT_EQ(dialog.validate(), QString());
}

TEST(NewSessionDialogTest, DefaultsToTheDefaultPreset) {
    NewSessionDialog dialog(capabilities(false), kvscope::config::RunSettings{});
    EXPECT_EQ(dialog.settings().preset, "llama");
}

TEST(NewSessionDialogTest, RefusesWhatCannotRun) {
    kvscope::config::RunSettings settings;
    settings.device = kvscope::config::ComputeDevice::Cuda;
    NewSessionDialog dialog(capabilities(false), settings);
    EXPECT_TRUE(dialog.validate().contains("CUDA is not available")) << dialog.validate().toStdString();
    NewSessionDialog withCuda(capabilities(true), settings);
    EXPECT_EQ(withCuda.validate(), QString());

    kvscope::config::RunSettings bits;
    bits.cache.kind = kvscope::config::CacheKind::Quantized;
    bits.cache.nbits = 3; // min-max allows 2, 4, 8
    NewSessionDialog quantized(capabilities(false), bits);
    EXPECT_TRUE(quantized.validate().contains("allowed: 2, 4, 8")) << quantized.validate().toStdString();

    kvscope::config::RunSettings config;
    config.configPath = "/no/such/config.json";
    NewSessionDialog missing(capabilities(false), config);
    EXPECT_TRUE(missing.validate().contains("/no/such/config.json"));
}

TEST(NewSessionDialogTest, ShowsTheTokenizerASourceBrings) {
    QTemporaryDir checkpoint;
    std::vector<std::string> asked;
    EngineCapabilities engine = capabilities(false);
    // The engine reads the tokenizer (LiveSession::describeTokenizer); here it answers per path.
    engine.describeTokenizer = [&](const std::string& path) {
        asked.push_back(path);
        return path == checkpoint.path().toStdString() ? std::string("BPE tokenizer, 1001 ids (tokenizer.json)")
                                                       : std::string("Unigram tokenizer, 32000 ids (tokenizer.model)");
    };
    NewSessionDialog presetDialog(engine, kvscope::config::RunSettings{});
    EXPECT_TRUE(presetDialog.tokenizerDescription().startsWith("bytes")) << "a preset alone speaks bytes";
    EXPECT_TRUE(asked.empty()) << "nothing to read";

    kvscope::config::RunSettings fromCheckpoint;
    fromCheckpoint.checkpointDir = checkpoint.path().toStdString();
    NewSessionDialog dialog(engine, fromCheckpoint);
    EXPECT_EQ(dialog.tokenizerDescription(), "BPE tokenizer, 1001 ids (tokenizer.json)");
    EXPECT_EQ(asked.back(), fromCheckpoint.checkpointDir);
    EXPECT_EQ(dialog.settings(), fromCheckpoint);
    EXPECT_EQ(dialog.validate(), QString());

    // A preset paired with a tokenizer file: the settings carry it and the dialog describes it.
    kvscope::config::RunSettings paired;
    paired.preset = "mistral";
    paired.tokenizerPath = "/models/tokenizer.model";
    dialog.setSettings(paired);
    EXPECT_EQ(dialog.settings(), paired);
    EXPECT_EQ(dialog.tokenizerDescription(), "Unigram tokenizer, 32000 ids (tokenizer.model)");
    EXPECT_EQ(asked.back(), paired.tokenizerPath);
    EXPECT_TRUE(dialog.validate().contains("Tokenizer not found: \"/models/tokenizer.model\""))
        << dialog.validate().toStdString();

    // Back to the checkpoint: its own tokenizer again, and no paired one in the settings.
    fromCheckpoint.tokenizerPath.clear();
    dialog.setSettings(fromCheckpoint);
    EXPECT_EQ(dialog.tokenizerDescription(), "BPE tokenizer, 1001 ids (tokenizer.json)");
    EXPECT_TRUE(dialog.settings().tokenizerPath.empty());
}

} // namespace
} // namespace kvscope::gui
