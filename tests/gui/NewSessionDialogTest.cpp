#include "kvscope/gui/NewSessionDialog.h"

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
    SessionSettings settings;
    settings.preset = "gemma3";
    settings.cacheKind = "quantized";
    settings.backend = "hqq";
    settings.nbits = 2;
    settings.residualLength = 16;
    settings.prompt = "hello";
    settings.tokens = 77;
    settings.seed = 5;
    NewSessionDialog dialog(capabilities(false), settings);
    EXPECT_EQ(dialog.settings(), settings);
    EXPECT_EQ(dialog.validate(), QString());
}

TEST(NewSessionDialogTest, DefaultsToTheDefaultPreset) {
    NewSessionDialog dialog(capabilities(false), SessionSettings{});
    EXPECT_EQ(dialog.settings().preset, "llama");
}

TEST(NewSessionDialogTest, RefusesWhatCannotRun) {
    SessionSettings settings;
    settings.device = "cuda";
    NewSessionDialog dialog(capabilities(false), settings);
    EXPECT_TRUE(dialog.validate().contains("CUDA is not available")) << dialog.validate().toStdString();
    NewSessionDialog withCuda(capabilities(true), settings);
    EXPECT_EQ(withCuda.validate(), QString());

    SessionSettings bits;
    bits.cacheKind = "quantized";
    bits.nbits = 3; // min-max allows 2, 4, 8
    NewSessionDialog quantized(capabilities(false), bits);
    EXPECT_TRUE(quantized.validate().contains("allowed: 2, 4, 8")) << quantized.validate().toStdString();

    SessionSettings config;
    config.configPath = "/no/such/config.json";
    NewSessionDialog missing(capabilities(false), config);
    EXPECT_TRUE(missing.validate().contains("/no/such/config.json"));
}

} // namespace
} // namespace kvscope::gui
