// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/AppLauncher.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/window/MainWindow.h"

#include <QImage>
#include <QTemporaryDir>
#include <QTextStream>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilities() {
    EngineCapabilities result;
    result.presets = {"gemma3", "llama"};
    result.defaultPreset = "llama";
    return result;
}

QString parseError(const QStringList& arguments) {
    const auto parsed = AppLauncher::parse(QStringList{"kvscope"} + arguments, capabilities());
    const auto* message = std::get_if<QString>(&parsed);
    return message ? *message : QString();
}

TEST(AppLauncherTest, ParsesTheDocumentedForms) {
    const auto parsed = AppLauncher::parse({"kvscope", "--preset", "gemma3", "--cache", "quantized", "--nbits", "2",
                                            "--tokens", "9", "--screenshot", "out.png", "--step", "4", "--layer", "1"},
                                           capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    const LaunchOptions& options = std::get<LaunchOptions>(parsed);
    EXPECT_EQ(options.live.preset, "gemma3");
    EXPECT_EQ(options.live.cache.kind, config::CacheKind::Quantized);
    EXPECT_EQ(options.live.cache.nbits, 2);
    EXPECT_EQ(options.live.tokens, 9);
    EXPECT_EQ(options.screenshot, "out.png");
    EXPECT_EQ(options.step, 4);
    EXPECT_EQ(options.layer, 1);
    EXPECT_EQ(options.size, QSize(1600, 1000));
    EXPECT_FALSE(options.live.weightSeed.has_value()); // a preset's trained weights

    const auto seeded = AppLauncher::parse({"kvscope", "--preset", "llama", "--weight-seed", "5"}, capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(seeded)) << std::get<QString>(seeded).toStdString();
    EXPECT_EQ(std::get<LaunchOptions>(seeded).live.weightSeed, std::optional<std::uint64_t>(5));

    const auto paired =
        AppLauncher::parse({"kvscope", "--config", "c.json", "--tokenizer", "/models/tok"}, capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(paired)) << std::get<QString>(paired).toStdString();
    EXPECT_EQ(std::get<LaunchOptions>(paired).live.tokenizerPath, "/models/tok");
}

TEST(AppLauncherTest, ParsesAPressAndItsOptions) {
    const auto parsed = AppLauncher::parse({"kvscope", "--press", "snapkv", "--ratio", "0.5", "--press-option",
                                            "window_size=4", "--press-option", "kernel_size=3", "--press-scores", "--events"},
                                           capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    const LaunchOptions& options = std::get<LaunchOptions>(parsed);
    EXPECT_EQ(options.live.press, (config::PressSettings{"snapkv", 0.5, {{"window_size", "4"}, {"kernel_size", "3"}}}));
    EXPECT_TRUE(options.pressScores);
    EXPECT_TRUE(options.eventLog);
    EXPECT_TRUE(parseError({"--press", "snap"}).contains("unknown press `snap` (allowed: streaming_llm"));
    EXPECT_TRUE(parseError({"--press", "knorm", "--ratio", "half"}).contains("--ratio must be a number"));
    EXPECT_TRUE(parseError({"--press", "knorm", "--press-option", "x"}).contains("expected key=value"));
    EXPECT_TRUE(parseError({"--ratio", "0.5"}).contains("need a press"));
    EXPECT_TRUE(parseError({"--compare-without-press"}).contains("goes with a live run's --press"));
    const auto compared = AppLauncher::parse({"kvscope", "--press", "knorm", "--ratio", "0.5", "--compare-without-press"},
                                             capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(compared));
    EXPECT_TRUE(std::get<LaunchOptions>(compared).compareWithoutPress);
}

TEST(AppLauncherTest, ParsesAServingWorkloadAndItsPool) {
    const auto parsed =
        AppLauncher::parse({"kvscope", "--workload", "chat-shared-system-prompt", "--preset", "llama", "--block-size",
                            "4", "--num-blocks", "24", "--max-num-batched-tokens", "32", "--max-num-seqs", "3",
                            "--no-prefix-caching", "--free-policy", "current"},
                           capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    const config::RunSettings& live = std::get<LaunchOptions>(parsed).live;
    ASSERT_TRUE(live.serving.has_value());
    const config::ServingSettings expected{"chat-shared-system-prompt", 4, 24, 32, 3, false, "current"};
    EXPECT_EQ(*live.serving, expected);
    EXPECT_EQ(live.tokens, 1 << 20) << "a serving run goes to its last request's end";
    const auto defaults = AppLauncher::parse({"kvscope", "--workload", "w.json"}, capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(defaults));
    EXPECT_EQ(*std::get<LaunchOptions>(defaults).live.serving, (config::ServingSettings{"w.json"}));
    EXPECT_FALSE(std::get<LaunchOptions>(AppLauncher::parse({"kvscope"}, capabilities())).live.serving.has_value());
}

TEST(AppLauncherTest, BadArgumentsNameTheProblemAndTheAllowedValues) {
    EXPECT_TRUE(parseError({"--preset", "gpt9"}).contains("allowed: gemma3, llama"));
    EXPECT_TRUE(parseError({"--cache", "paged"}).contains("allowed: dynamic, static, quantized, offloaded"));
    EXPECT_TRUE(parseError({"--device", "tpu"}).contains("allowed: cpu, cuda"));
    EXPECT_TRUE(parseError({"--backend", "int4"}).contains("allowed: min-max, quanto (= min-max), hqq"));
    // The settings' own checks are the CLI's and the engine's (config::validate).
    EXPECT_TRUE(parseError({"--tokens", "0"}).contains("tokens must be at least 1, got 0"));
    EXPECT_TRUE(parseError({"--cache", "quantized", "--nbits", "3"}).contains("allowed: 2, 4, 8"));
    EXPECT_TRUE(parseError({"--cache", "quantized", "--backend", "hqq", "--nbits", "3"}).isEmpty());
    EXPECT_TRUE(parseError({"--preset", "llama", "--checkpoint", "/x"}).contains("one model source"));
    EXPECT_TRUE(parseError({"--checkpoint", "/x", "--tokenizer", "/t"}).contains("a checkpoint folder brings its own"));
    EXPECT_TRUE(parseError({"--device", "cuda"}).contains("not available"));
    EXPECT_TRUE(parseError({"--step", "3"}).contains("--screenshot"));
    EXPECT_TRUE(parseError({"--screenshot", "x.png", "--step", "-1"}).contains("non-negative"));
    EXPECT_TRUE(parseError({"--layer", "2"}).contains("--screenshot"));
    EXPECT_TRUE(parseError({"--screenshot", "x.png", "--layer", "x"}).contains("--layer must be a non-negative"));
    EXPECT_TRUE(parseError({"/no/such/file.kvs"}).contains("not found"));
    EXPECT_TRUE(parseError({"--synthetic", "lots"}).contains("LAYERSxTOKENS"));
    EXPECT_TRUE(parseError({"--size", "10x10"}).contains("320x240"));
    EXPECT_TRUE(parseError({"--weight-seed", "-2"}).contains("--weight-seed must be a whole number"));
    EXPECT_FALSE(parseError({"--bogus"}).isEmpty());
}

TEST(AppLauncherTest, BadServingArgumentsAreRefusedWithTheFix) {
    EXPECT_EQ(parseError({"--block-size", "4"}),
              "--block-size, --num-blocks, --max-num-batched-tokens, --max-num-seqs, --no-prefix-caching and "
              "--free-policy go with --workload");
    EXPECT_EQ(parseError({"--workload", "w.json", "--num-blocks", "0"}),
              "--num-blocks must be a whole number at least 1, got `0`");
    EXPECT_EQ(parseError({"--workload", "w.json", "--free-policy", "lru"}),
              "--free-policy must be document or current, got `lru`");
}

TEST(AppLauncherTest, ScreenshotOfALiveRunIsAPaintedPicture) {
    MainWindow window(testing::syntheticFactory(), capabilities());
    QTemporaryDir dir;
    LaunchOptions options;
    options.live.tokens = 20;
    options.live.cache.kind = config::CacheKind::Offloaded;
    options.screenshot = dir.filePath("shot.png");
    options.step = 12;
    options.layer = 3;
    options.size = QSize(1200, 800);
    QString log;
    QTextStream errors(&log);
    EXPECT_EQ(AppLauncher::launch(window, options, errors), 0) << log.toStdString();
    EXPECT_EQ(window.session().currentStep(), 12);
    EXPECT_EQ(window.selection().selectedLayer(), 3);
    const QImage image(options.screenshot);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1200, 800));
    EXPECT_TRUE(AppLauncher::looksPainted(image));
}

TEST(AppLauncherTest, AStepBeyondTheSessionIsRefused) {
    MainWindow window(testing::syntheticFactory(), capabilities());
    QTemporaryDir dir;
    LaunchOptions options;
    options.syntheticLayers = 4;
    options.syntheticTokens = 10;
    options.screenshot = dir.filePath("shot.png");
    options.step = 50;
    QString log;
    QTextStream errors(&log);
    EXPECT_EQ(AppLauncher::launch(window, options, errors), 2);
    EXPECT_TRUE(log.contains("beyond the session's last step 10")) << log.toStdString();
    options.step = 5;
    options.layer = 4;
    EXPECT_EQ(AppLauncher::launch(window, options, errors), 2);
    EXPECT_TRUE(log.contains("beyond the session's last layer 3")) << log.toStdString();
}

TEST(AppLauncherTest, UniformPicturesAreNotScreenshots) {
    QImage blank(200, 100, QImage::Format_RGB32);
    blank.fill(Qt::white);
    EXPECT_FALSE(AppLauncher::looksPainted(blank));
    EXPECT_FALSE(AppLauncher::looksPainted(QImage()));
    QImage framed = blank;
    for (int x = 0; x < 200; ++x) {
        framed.setPixel(x, 0, qRgb(0, 0, 0));
    }
    EXPECT_FALSE(AppLauncher::looksPainted(framed)) << "a frame alone is not content";
    QImage painted = blank;
    for (int y = 20; y < 80; ++y) {
        for (int x = 20; x < 180; ++x) {
            painted.setPixel(x, y, qRgb(38, 139, 210));
        }
    }
    EXPECT_TRUE(AppLauncher::looksPainted(painted));
}

} // namespace
} // namespace kvscope::gui
