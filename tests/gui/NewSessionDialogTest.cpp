// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/NewSessionDialog.h"

#include <QApplication>
#include <gtest/gtest.h>

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

} // namespace
} // namespace kvscope::gui
