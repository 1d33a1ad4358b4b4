// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/AppLauncher.h"

#include "CommandLineText.h"
#include "GoldenFile.h"
#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/SessionFailurePanel.h"
#include "kvscope/gui/window/TransportBar.h"

#include <QImage>
#include <QTemporaryDir>
#include <QTextStream>
#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QFileInfo>
#include <QTest>
#include <QTimer>

// The connection this file's crash test catches writes into a frame that has returned: make ASan check
// returned frames (GCC and Clang build the fake stack in; the runtime turns it on).
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
    return "detect_stack_use_after_return=1";
}
#endif

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

TEST(AppLauncherTest, ALiveSessionSamplesUnlessAskedForGreedy) {
    const auto live = [](const QStringList& arguments) {
        const auto parsed =
            AppLauncher::parse(QStringList{"kvscope", "--preset", "llama"} + arguments, capabilities());
        EXPECT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
        return std::holds_alternative<LaunchOptions>(parsed) ? std::get<LaunchOptions>(parsed).live
                                                             : config::RunSettings{};
    };
    const struct {
        QStringList arguments;
        double temperature;
        std::int64_t topK;
        std::int64_t beams;
    } cases[] = {
        {{}, 0.8, 40, 1},
        {{"--temperature", "0"}, 0.0, 40, 1},
        {{"--temperature", "0", "--top-k", "0"}, 0.0, 0, 1},
        {{"--temperature", "1.5", "--top-k", "5"}, 1.5, 5, 1},
        // Beams are deterministic: greedy beams rather than a refusal of the sampling default.
        {{"--beams", "3"}, 0.0, 0, 3},
    };
    for (const auto& expected : cases) {
        const config::RunSettings settings = live(expected.arguments);
        EXPECT_EQ(settings.temperature, expected.temperature) << expected.arguments.join(' ').toStdString();
        EXPECT_EQ(settings.topK, expected.topK) << expected.arguments.join(' ').toStdString();
        EXPECT_EQ(settings.beams, expected.beams) << expected.arguments.join(' ').toStdString();
        EXPECT_EQ(settings.seed, 0u);
    }
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
    EXPECT_TRUE(parseError({"--press", "knorm", "--ratio", "half"})
                    .contains("--ratio: must be a number in [0, 1), got `half`"));
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

TEST(AppLauncherTest, ParsesAnAttachmentToAServer) {
    const auto parsed = AppLauncher::parse({"kvscope", "--attach", "tcp://127.0.0.1:5557", "--replay", "tcp://127.0.0.1:5558",
                                            "--topic", "kv", "--metrics", "http://127.0.0.1:8000/metrics", "--tokenizer",
                                            "/models/smollm2", "--seconds", "2.5"},
                                           capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    const LaunchOptions& options = std::get<LaunchOptions>(parsed);
    ASSERT_TRUE(options.live.attach.has_value());
    const config::AttachSettings expected{"tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558", "kv",
                                          "http://127.0.0.1:8000/metrics", 2.5};
    EXPECT_EQ(*options.live.attach, expected);
    EXPECT_EQ(options.live.tokenizerPath, "/models/smollm2");
    EXPECT_FALSE(options.welcome);
    const auto attachError = [](const QStringList& arguments) {
        QStringList line{"kvscope"};
        line << arguments;
        const auto result = AppLauncher::parse(line, capabilities());
        return std::holds_alternative<QString>(result) ? std::get<QString>(result) : QString();
    };
    EXPECT_EQ(attachError({"--replay", "tcp://h:1"}), "--replay goes with --attach ENDPOINT");
    EXPECT_TRUE(attachError({"--attach", "tcp://h:1", "--workload", "w.json"}).contains("give no session FILE"));
    EXPECT_TRUE(attachError({"--attach", "tcp://h:1", "--model", "smollm2"}).contains("give no model source"));
    EXPECT_TRUE(attachError({"--attach", "tcp://h:1", "--screenshot", "x.png"}).contains("needs --seconds N"));
    EXPECT_EQ(attachError({"--attach", "tcp://h:1", "--seconds", "soon"}), "--seconds must be a positive number, got `soon`");
}

TEST(AppLauncherTest, BadArgumentsNameTheProblemAndTheAllowedValues) {
    EXPECT_TRUE(parseError({"--preset", "gpt9"}).contains("allowed: gemma3, llama"));
    EXPECT_TRUE(parseError({"--cache", "paged"}).contains("allowed: dynamic, static, quantized, offloaded"));
    EXPECT_TRUE(parseError({"--device", "tpu"}).contains("allowed: cpu, cuda"));
    EXPECT_TRUE(parseError({"--backend", "int4"}).contains("allowed: min-max, quanto (= min-max), hqq"));
    // The run options' checks are kvscope-cli run's (config::RunOptionTable), then the engine's
    // (config::validate).
    EXPECT_EQ(parseError({"--tokens", "0"}), "--tokens: must be a whole number at least 1, got `0`");
    EXPECT_TRUE(parseError({"--cache", "quantized", "--nbits", "3"}).contains("allowed: 2, 4, 8"));
    EXPECT_TRUE(parseError({"--cache", "quantized", "--backend", "hqq", "--nbits", "3"}).isEmpty());
    EXPECT_TRUE(parseError({"--preset", "llama", "--checkpoint", "/x"}).contains("one model source"));
    EXPECT_TRUE(parseError({"--checkpoint", "/x", "--tokenizer", "/t"}).contains("brings its own tokenizer"));
    EXPECT_TRUE(parseError({"--model", "smollm2", "--tokenizer", "/t"}).contains("brings its own tokenizer"));
    EXPECT_TRUE(parseError({"--model", "smollm2", "--preset", "llama"}).contains("one model source"));
    EXPECT_TRUE(parseError({"--device", "cuda"}).contains("not available"));
    EXPECT_TRUE(parseError({"--step", "3"}).contains("--screenshot"));
    EXPECT_TRUE(parseError({"--screenshot", "x.png", "--step", "-1"}).contains("non-negative"));
    EXPECT_TRUE(parseError({"--layer", "2"}).contains("--screenshot"));
    EXPECT_TRUE(parseError({"--screenshot", "x.png", "--layer", "x"}).contains("--layer must be a non-negative"));
    EXPECT_TRUE(parseError({"/no/such/file.kvs"}).contains("not found"));
    EXPECT_TRUE(parseError({"--synthetic", "lots"}).contains("LAYERSxTOKENS"));
    EXPECT_TRUE(parseError({"--size", "10x10"}).contains("320x240"));
    EXPECT_TRUE(
        parseError({"--weight-seed", "-2"}).contains("--weight-seed: must be a whole number at least 0"));
    EXPECT_FALSE(parseError({"--bogus"}).isEmpty());
}

// With no pool option, a built-in workload is served over the pool it suggests (its file's "pool"); each
// pool option given wins over the suggestion; --compare-serving changes the suggested pool.
TEST(AppLauncherTest, AWorkloadBringsItsSuggestedPoolWhereNoneIsGiven) {
    struct Case {
        std::vector<const char*> arguments;
        config::ServingSettings expected;
    };
    const Case cases[] = {
        {{"--workload", "chat-shared-system-prompt"},
         {"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}},
        {{"--workload", "chat-shared-system-prompt", "--num-blocks", "64"},
         {"chat-shared-system-prompt", 16, 64, 256, 8, true, "document"}},
        {{"--workload", "burst-preemption", "--block-size", "8", "--no-prefix-caching"},
         {"burst-preemption", 8, 48, 256, 8, false, "document"}},
        {{"--workload", "rag-shared-document", "--max-num-seqs", "2"},
         {"rag-shared-document", 16, 64, 128, 2, true, "document"}},
    };
    for (const Case& c : cases) {
        QStringList arguments{QStringLiteral("kvscope")};
        for (const char* argument : c.arguments) {
            arguments << QString::fromLatin1(argument);
        }
        const auto parsed = AppLauncher::parse(arguments, capabilities());
        ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
        EXPECT_EQ(*std::get<LaunchOptions>(parsed).live.serving, c.expected)
            << arguments.join(' ').toStdString();
    }
    const auto compared = AppLauncher::parse(
        {"kvscope", "--workload", "prefix-caching-example", "--compare-serving", "prefix-caching=off"},
        capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(compared));
    EXPECT_EQ(*std::get<LaunchOptions>(compared).compareServing,
              (config::ServingSettings{"prefix-caching-example", 4, 10, 256, 8, false, "document"}));
}

TEST(AppLauncherTest, BadServingArgumentsAreRefusedWithTheFix) {
    EXPECT_EQ(parseError({"--block-size", "4"}),
              "--block-size, --num-blocks, --max-num-batched-tokens, --max-num-seqs, --no-prefix-caching and "
              "--free-policy go with --workload");
    // The refusals are kvscope-cli serve's (paged::ServingOptionTable): --free-policy read by
    // paged::freePolicyFromString.
    EXPECT_EQ(parseError({"--workload", "w.json", "--num-blocks", "0"}),
              "--num-blocks: must be a whole number at least 1, got `0`");
    EXPECT_EQ(parseError({"--workload", "w.json", "--free-policy", "lru"}),
              "--free-policy: unknown value `lru` (allowed: document, current)");
    EXPECT_EQ(
        parseError({"--compare-serving", "prefix-caching=off"}),
        "--compare-serving goes with --workload: it serves the same workload a second time with its changes");
    EXPECT_EQ(parseError({"--workload", "w.json", "--compare-serving", "prefix-caching=maybe"}),
              "--compare-serving: prefix-caching=maybe: allowed values on, off");
    EXPECT_EQ(parseError({"--workload", "w.json", "--compare-serving", "pool=3"}),
              "--compare-serving: unknown setting `pool` to change (allowed: block-size, num-blocks, "
              "max-num-batched-tokens, max-num-seqs, free-policy, prefix-caching-hash-algo, prefix-caching)");
}

TEST(AppLauncherTest, ParsesAServingCompareRun) {
    const auto parsed =
        AppLauncher::parse({"kvscope", "--workload", "prefix-caching-example", "--block-size", "4",
                            "--num-blocks", "10", "--compare-serving", "prefix-caching=off,num-blocks=20"},
                           capabilities());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    const LaunchOptions& options = std::get<LaunchOptions>(parsed);
    EXPECT_EQ(*options.live.serving,
              (config::ServingSettings{"prefix-caching-example", 4, 10, 256, 8, true, "document"}));
    ASSERT_TRUE(options.compareServing.has_value());
    EXPECT_EQ(*options.compareServing,
              (config::ServingSettings{"prefix-caching-example", 4, 20, 256, 8, false, "document"}));
    EXPECT_FALSE(
        std::get<LaunchOptions>(AppLauncher::parse({"kvscope", "--workload", "w.json"}, capabilities()))
            .compareServing.has_value());
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

// What the report's engine said: SnapKV's default window does not fit gemma3's default prompt.
const char* const kSnapKvRefusal =
    "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a "
    "longer prompt or --press-option window_size=8";

// launch() in a frame of its own that is gone, and its stack reused, before the session fails.
std::optional<int> launchAndReturn(MainWindow& window, const LaunchOptions& options, QTextStream& errors) {
    return AppLauncher::launch(window, options, errors);
}

// How many connections SessionController::errorOccurred has (QObject::receivers is protected).
int errorReceivers(SessionController& session) {
    struct Peek : SessionController {
        using QObject::receivers;
    };
    return static_cast<Peek&>(session).receivers(SIGNAL(errorOccurred(QString)));
}

[[gnu::noinline]] int scribbleOnTheStack(int seed) {
    volatile char bytes[4096];
    for (int index = 0; index < 4096; ++index) {
        bytes[index] = static_cast<char>(seed + index);
    }
    return bytes[seed % 4096];
}

// Closes whatever modal dialog a key opened, so that the key sequence runs to its end.
void rejectModalDialogs() {
    if (QWidget* modal = QApplication::activeModalWidget()) {
        if (auto* dialog = qobject_cast<QDialog*>(modal)) {
            dialog->reject();
        }
    }
}

// The report: a live session fails at its prefill after launch() returned, then Escape, Return, ctrl+z,
// Right. launch() connected errorOccurred to a lambda capturing its local by reference, with the window
// as context: the failure wrote through a dangling reference (ASan: stack-use-after-return; a release
// build: a heap corrupted, an abort a few keys later).
TEST(AppLauncherTest, ALiveSessionFailingAfterLaunchLeavesAUsableWindowThatSaysWhy) {
    // On a real display (QT_QPA_PLATFORM=xcb under xvfb-run) the failure also opens a message box, and the
    // keys may open dialogs: closed as a user would, so that the sequence runs to its end.
    QTimer closer;
    QObject::connect(&closer, &QTimer::timeout, &rejectModalDialogs);
    closer.start(200);
    MainWindow window(testing::failingFactory(testing::FailAt::Prefill, kSnapKvRefusal, 0, 50),
                      capabilities());
    LaunchOptions options;
    options.live.preset = "gemma3";
    options.live.cache.kind = config::CacheKind::Quantized;
    options.live.cache.nbits = 2;
    options.live.cache.residualLength = 8;
    options.live.press = config::PressSettings{"snapkv", 0.5, {}};
    options.live.tokens = 200;
    QString log;
    QTextStream errors(&log);
    const int receivers = errorReceivers(window.session());
    ASSERT_EQ(launchAndReturn(window, options, errors), std::nullopt) << log.toStdString();
    // Nothing launch() connected outlives it (its frame is gone: a lambda into it would write there).
    EXPECT_EQ(errorReceivers(window.session()), receivers);
    EXPECT_NE(scribbleOnTheStack(7), 1000);
    window.resize(1200, 800);
    window.show();
    window.activateWindow();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFailure().has_value(); }));
    QCoreApplication::processEvents();

    for (const QKeySequence& key : {QKeySequence(Qt::Key_Escape), QKeySequence(Qt::Key_Return),
                                    QKeySequence(Qt::CTRL | Qt::Key_Z), QKeySequence(Qt::Key_Right)}) {
        QWidget* target = QApplication::focusWidget() != nullptr ? QApplication::focusWidget() : &window;
        QTest::keyClick(target, key[0].key(), key[0].keyboardModifiers());
        QTest::qWait(30);
    }

    const auto& failure = window.session().liveFailure();
    ASSERT_TRUE(failure.has_value());
    EXPECT_EQ(failure->stage, LiveFailure::Stage::Prefill);
    EXPECT_EQ(failure->reason, kSnapKvRefusal);
    const SessionFailurePanel* panel = window.occupancyMap()->failurePanel();
    EXPECT_TRUE(panel->isVisible());
    EXPECT_EQ(panel->headline(), "The live session failed at its prefill (step 0)");
    EXPECT_EQ(panel->reason(), kSnapKvRefusal);
    EXPECT_EQ(window.session().liveSettings().press, options.live.press)
        << "what New session is filled in with";
    testing::expectDocksDocked(window, "after the failure and the keys");

    // Still usable: another session opens and the panel goes.
    testing::loadSynthetic(window.session(), testing::smallSession(12));
    QCoreApplication::processEvents();
    EXPECT_FALSE(panel->isVisible());
    EXPECT_FALSE(window.session().liveFailure().has_value());
    window.transport()->stepAction()->trigger();
    EXPECT_EQ(window.session().currentStep(), 1);
}

TEST(AppLauncherTest, AHeadlessScreenshotOfAFailedSessionSaysWhyAndWritesNothing) {
    MainWindow window(testing::failingFactory(testing::FailAt::Prefill, kSnapKvRefusal), capabilities());
    QTemporaryDir dir;
    LaunchOptions options;
    options.live.press = config::PressSettings{"snapkv", 0.5, {}};
    options.screenshot = dir.filePath("shot.png");
    QString log;
    QTextStream errors(&log);
    EXPECT_EQ(AppLauncher::launch(window, options, errors), 2);
    EXPECT_EQ(log.trimmed(),
              QStringLiteral("kvscope: The live session failed at its prefill (step 0): ") + kSnapKvRefusal);
    EXPECT_FALSE(QFileInfo::exists(options.screenshot));
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

namespace kvscope::gui {
namespace {

/// What parse() made of a command line, every field of LaunchOptions (the live run as a command line).
std::string launchOptionsText(const std::variant<LaunchOptions, QString>& parsed) {
    if (const auto* message = std::get_if<QString>(&parsed)) {
        return "refused: " + message->toStdString() + "\n";
    }
    const LaunchOptions& options = std::get<LaunchOptions>(parsed);
    std::string text = "live: " + testing::commandLineOf(options.live) + "\n";
    const auto field = [&text](const char* name, const std::string& value) {
        text += std::string("  ") + name + ": " + value + "\n";
    };
    field("file", options.file.toStdString());
    field("screenshot", options.screenshot.toStdString());
    field("step", options.step ? std::to_string(*options.step) : "-");
    field("layer", options.layer ? std::to_string(*options.layer) : "-");
    field("compare", options.compareFile.toStdString());
    field("size", std::to_string(options.size.width()) + "x" + std::to_string(options.size.height()));
    field("synthetic", std::to_string(options.syntheticLayers) + "x" + std::to_string(options.syntheticTokens));
    field("flags", std::string(options.pressScores ? "press-scores " : "") + (options.eventLog ? "events " : "") +
                       (options.compareWithoutPress ? "compare-without-press " : "") +
                       (options.welcome ? "welcome" : ""));
    field("tour", options.tour.toStdString());
    if (options.compareServing) {
        config::RunSettings compared;
        compared.serving = options.compareServing;
        field("compare-serving", testing::commandLineOf(compared));
    }
    return text;
}

// Golden output (tests/data/goldens/cli/): kvscope --help and what the launcher makes of a table of command
// lines, accepted and refused, byte for byte.
TEST(AppLauncherTest, HelpAndParsedCommandLinesReadAsTheGoldenFiles) {
    const auto parsed = AppLauncher::parse({QCoreApplication::arguments().constFirst(), "--help"}, capabilities());
    ASSERT_TRUE(std::holds_alternative<QString>(parsed));
    // The usage line names the executable as it was started: the test's own path here.
    QString help = std::get<QString>(parsed);
    help.replace(QCoreApplication::arguments().constFirst(), QStringLiteral("kvscope"));
    EXPECT_TRUE(kvscope::testing::GoldenFile::matches("cli/kvscope-help.txt", help.toStdString()));

    const QString session = QStringLiteral(KVSCOPE_SOURCE_DIR "/sessions/llama-dynamic.kvsess");
    const QString other = QStringLiteral(KVSCOPE_SOURCE_DIR "/sessions/llama-adakv.kvsess");
    const std::vector<QStringList> lines = {
        {},
        {session},
        {session, "--compare", other, "--screenshot", "out.png", "--step", "3", "--layer", "1", "--size", "800x600"},
        {"--preset", "gemma3", "--cache", "quantized", "--nbits", "2", "--residual", "16", "--tokens", "9"},
        {"--preset", "llama", "--press", "adakv", "--ratio", "0.5", "--press-option", "base=snapkv",
         "--press-option", "window_size=8", "--press-scores", "--events", "--compare-without-press"},
        {"--preset", "llama", "--beams", "3"},
        {"--preset", "llama", "--temperature", "0.7", "--top-k", "5", "--seed", "9", "--ignore-eos", "--chat"},
        {"--synthetic", "8x64"},
        {"--screenshot", "out.png"},
        {"--workload", "chat-shared-system-prompt"},
        {"--workload", "burst-preemption", "--num-blocks", "12", "--compare-serving", "prefix-caching=off"},
        {"--tour", "sliding-window"},
        {"--tour", "no-such-tour"},
        {session, "extra.kvsess"},
        {"/no/such/file.kvsess"},
        {session, "--preset", "llama"},
        {"--block-size", "8"},
        {"--preset", "llama", "--compare-serving", "num-blocks=4"},
        {"--workload", "chat-shared-system-prompt", "--compare", other, "--compare-serving", "num-blocks=4"},
        {"--workload", "chat-shared-system-prompt", "--compare-serving", "colour=blue"},
        {"--workload", "chat-shared-system-prompt", session},
        {"--compare-without-press", "--preset", "llama"},
        {"--preset", "nope"},
        {"--device", "cuda"},
        {"--step", "2"},
        {"--screenshot", "out.png", "--step", "-1"},
        {"--size", "100x100"},
        {"--compare", "/no/such/other.kvsess"},
        {"--synthetic", "8"},
        {"--tokens", "0"},
        {"--no-such-option"},
    };
    std::string text;
    for (const QStringList& line : lines) {
        QString shown = line.join(' ');
        shown.replace(QStringLiteral(KVSCOPE_SOURCE_DIR), QStringLiteral("SOURCE"));
        QString result = QString::fromStdString(launchOptionsText(AppLauncher::parse(QStringList{"kvscope"} + line,
                                                                                     capabilities())));
        result.replace(QStringLiteral(KVSCOPE_SOURCE_DIR), QStringLiteral("SOURCE"));
        text += "$ kvscope " + shown.toStdString() + "\n" + result.toStdString();
    }
    EXPECT_TRUE(kvscope::testing::GoldenFile::matches("cli/kvscope-parse.txt", text));
}

} // namespace
} // namespace kvscope::gui
