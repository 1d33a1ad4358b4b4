// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/AppLauncher.h"

#include "kvscope/config/ConfigError.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/window/QtRunOptions.h"
#include "kvscope/gui/tours/TourCatalog.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/config/ConfigError.h"
#include "kvscope/paged/ServingOptionTable.h"
#include "kvscope/trace/RecordingSink.h"

#include <QAction>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHash>
#include <QImage>
#include <QRegularExpression>
#include <QTextStream>

namespace kvscope::gui {
namespace {

std::optional<std::int64_t> toInteger(const QString& text, std::int64_t minimum) {
    bool ok = false;
    const qlonglong value = text.toLongLong(&ok);
    if (!ok || value < minimum) {
        return std::nullopt;
    }
    return value;
}

/// One of kvscope's own command-line options (beside the run's, config::RunOptionTable, and the serving ones,
/// paged::ServingOptionTable): its name, help, value word (empty for a flag) and default.
struct LauncherOption {
    const char* name;
    const char* help;
    const char* valueName = "";
    const char* defaultValue = "";
};

/// Listed before the run's options: answered by main() before the window exists (version, list-tours) and
/// the tour, whose options are read as if typed.
const std::vector<LauncherOption>& launcherOptionsFirst() {
    static const std::vector<LauncherOption> options = {
        {"version", "Print the version and the commit, then exit"},
        {"list-tours", "Print the guided tours as JSON (name, title, preset, settings), then exit"},
        {"tour", "Start a guided tour live (kvscope --list-tours); later options change its settings", "NAME"},
    };
    return options;
}

/// Following a running server instead of running a model (kvscope-cli attach's options, docs/paged.md).
const std::vector<LauncherOption>& launcherAttachOptions() {
    static const std::vector<LauncherOption> options = {
        {"attach", "Follow a running vLLM or SGLang server's KV cache: its KV event endpoint (tcp://HOST:PORT or "
                   "ipc://PATH)", "ENDPOINT"},
        {"replay", "With --attach: the server's replay endpoint, to catch up from its first message and fill gaps",
         "ENDPOINT"},
        {"topic", "With --attach: only messages of this topic (default: all)", "TOPIC"},
        {"metrics", "With --attach: the server's metrics page (http://HOST:PORT/metrics), for its prefix hit rate",
         "URL"},
        {"seconds", "With --attach: stop following after this many seconds (default: when stopped)", "N"},
    };
    return options;
}

/// Listed after the run's and the serving options: the window's.
const std::vector<LauncherOption>& launcherWindowOptions() {
    static const std::vector<LauncherOption> options = {
        {"screenshot", "Render the window to a PNG offscreen and exit", "OUT.png"},
        {"step", "Step shown by --screenshot (default: last)", "K"},
        {"layer", "Layer selected by --screenshot", "L"},
        {"position", "Token position selected by --screenshot (the transcript scrolls to it, the map outlines it)", "P"},
        {"size", "Window size for --screenshot", "WxH", "1600x1000"},
        {"compare", "A second session file to compare with", "FILE"},
        {"synthetic", "Open a model-free synthetic session of that size", "LAYERSxTOKENS"},
        {"press-scores", "Shade the tokens a press kept by their scores (View menu)"},
        {"events", "Show the event log (why each event happened) instead of the layer table"},
        {"compare-without-press", "Compare the live --press run with the same run without its press (Compare menu)"},
    };
    return options;
}

void addLauncherOptions(QCommandLineParser& parser, const std::vector<LauncherOption>& options) {
    for (const LauncherOption& option : options) {
        parser.addOption(QCommandLineOption(QString::fromLatin1(option.name), QString::fromUtf8(option.help),
                                            QString::fromLatin1(option.valueName),
                                            QString::fromLatin1(option.defaultValue)));
    }
}

/// Every option of kvscope's command line, in the order --help lists them.
void addAllLauncherOptions(QCommandLineParser& parser) {
    parser.setApplicationDescription(QStringLiteral("kvscope: inspect the KV caches of transformer language models"));
    parser.addHelpOption();
    addLauncherOptions(parser, launcherOptionsFirst());
    parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("A session file to replay"));
    // The live run's options are kvscope-cli run's (config::RunOptionTable), with a live session's defaults
    // (sampling); the rest are the window's.
    QtRunOptions::addTo(parser, config::liveSessionSettings());
    // Serving: a workload of requests over a paged pool (docs/paged.md), with kvscope-cli serve's options
    // (paged::ServingOptionTable, defaults from config::ServingSettings).
    QtRunOptions::addTo(parser, config::RunSettings{}, paged::ServingOptionTable::options());
    QtRunOptions::addTo(parser, config::RunSettings{}, {paged::ServingOptionTable::compareOption()});
    addLauncherOptions(parser, launcherAttachOptions());
    addLauncherOptions(parser, launcherWindowOptions());
}

QString launcherOptionName(const char* name) { return QString::fromLatin1(name); }

/// One step of reading a parsed command line into LaunchOptions: "" or the refusal. The steps run in
/// order, so that a line with several problems is refused for the first.
using LaunchStep = QString (*)(const QCommandLineParser&, const EngineCapabilities&, LaunchOptions&);

/// The session FILE (at most one, existing) and whether only the window's options were given.
QString readLaunchFile(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    // Only the window's own options given (or none): nothing to show yet, so the welcome page.
    static const QStringList windowOnly{QStringLiteral("screenshot"), QStringLiteral("size"), QStringLiteral("step"),
                                        QStringLiteral("layer"), QStringLiteral("position"), QStringLiteral("events"), QStringLiteral("press-scores")};
    bool onlyWindowOptions = parser.positionalArguments().isEmpty();
    for (const QString& name : parser.optionNames()) {
        onlyWindowOptions = onlyWindowOptions && windowOnly.contains(name);
    }
    options.welcome = onlyWindowOptions;
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1) {
        return QStringLiteral("give at most one session FILE, got %1").arg(positional.size());
    }
    if (!positional.isEmpty()) {
        options.file = positional.front();
        if (!QFileInfo(options.file).isFile()) {
            return QStringLiteral("session file not found: %1").arg(options.file);
        }
    }
    const bool modelGiven =
        parser.isSet(QStringLiteral("preset")) || parser.isSet(QStringLiteral("config")) ||
        parser.isSet(QStringLiteral("checkpoint")) || parser.isSet(QStringLiteral("model")) ||
        parser.isSet(QStringLiteral("tokenizer"));
    if (!options.file.isEmpty() && (modelGiven || parser.isSet(launcherOptionName("synthetic")))) {
        return QStringLiteral("give either a session FILE to replay or a model to run, not both");
    }
    return {};
}

/// The live run's options, from a live session's defaults.
QString readLaunchRun(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    config::RunSettings& live = options.live;
    live = config::liveSessionSettings();
    if (const QString refusal = QtRunOptions::apply(parser, live); !refusal.isEmpty()) {
        return refusal;
    }
    // Beam search is deterministic: asking for beams without a temperature means greedy beams, not a
    // refusal of the sampling default.
    if (live.beams > 1 && !parser.isSet(QStringLiteral("temperature"))) {
        live.temperature = 0.0;
        live.topK = 0;
    }
    return {};
}

/// The serving options: a workload served live over a paged pool, maybe compared with changed settings.
QString readLaunchServing(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    config::RunSettings& live = options.live;
    // Read into a run of its own first: any serving option would make `live` a serving run.
    config::RunSettings servingRun;
    if (const QString refusal = QtRunOptions::apply(parser, servingRun, paged::ServingOptionTable::options());
        !refusal.isEmpty()) {
        return refusal;
    }
    const QString compareServing = QStringLiteral("compare-serving");
    if (servingRun.serving && !parser.isSet(QStringLiteral("workload"))) {
        return QStringLiteral("--block-size, --num-blocks, --max-num-batched-tokens, --max-num-seqs, "
                              "--no-prefix-caching and --free-policy go with --workload");
    }
    if (parser.isSet(compareServing) && !servingRun.serving) {
        return QStringLiteral(
            "--compare-serving goes with --workload: it serves the same workload a second time "
            "with its changes");
    }
    if (!servingRun.serving) {
        return {};
    }
    if (!options.file.isEmpty() || parser.isSet(launcherOptionName("synthetic"))) {
        return QStringLiteral("--workload serves live: give no session FILE or --synthetic with it");
    }
    // The pool the workload suggests for each pool option not given, before --compare-serving's changes.
    live.serving = paged::ServingOptionTable::withSuggestedPool(
        *servingRun.serving, [&parser](std::string_view name) {
            return parser.isSet(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
        });
    // A serving run goes on until its last request finishes (tokens count its steps).
    if (!parser.isSet(QStringLiteral("tokens"))) {
        live.tokens = 1 << 20;
    }
    if (parser.isSet(compareServing)) {
        if (parser.isSet(launcherOptionName("compare"))) {
            return QStringLiteral("give either --compare FILE or --compare-serving CHANGES, not both");
        }
        const auto changed =
            paged::ServingOptionTable::changed(*live.serving, parser.value(compareServing).toStdString());
        if (const std::string* refusal = std::get_if<std::string>(&changed)) {
            return QStringLiteral("--compare-serving: %1").arg(QString::fromStdString(*refusal));
        }
        options.compareServing = std::get<config::ServingSettings>(changed);
    }
    return {};
}

/// Following a server: --attach and the options that go with it.
QString readLaunchAttach(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    const QString attach = launcherOptionName("attach");
    if (!parser.isSet(attach)) {
        for (const char* name : {"replay", "topic", "metrics", "seconds"}) {
            if (parser.isSet(launcherOptionName(name))) {
                return QStringLiteral("--%1 goes with --attach ENDPOINT").arg(launcherOptionName(name));
            }
        }
        return {};
    }
    if (!options.file.isEmpty() || parser.isSet(launcherOptionName("synthetic")) || options.live.serving) {
        return QStringLiteral("--attach follows a running server: give no session FILE, --synthetic or --workload "
                              "with it");
    }
    config::AttachSettings settings;
    settings.endpoint = parser.value(attach).toStdString();
    settings.replayEndpoint = parser.value(launcherOptionName("replay")).toStdString();
    settings.topic = parser.value(launcherOptionName("topic")).toStdString();
    settings.metricsUrl = parser.value(launcherOptionName("metrics")).toStdString();
    if (parser.isSet(launcherOptionName("seconds"))) {
        bool ok = false;
        settings.seconds = parser.value(launcherOptionName("seconds")).toDouble(&ok);
        if (!ok || settings.seconds <= 0) {
            return QStringLiteral("--seconds must be a positive number, got `%1`")
                .arg(parser.value(launcherOptionName("seconds")));
        }
    }
    if (parser.isSet(launcherOptionName("screenshot")) && settings.seconds <= 0) {
        return QStringLiteral("--attach with --screenshot needs --seconds N: how long to follow the server before "
                              "the picture");
    }
    options.live.attach = settings;
    options.live.tokens = 1 << 30; // followed until stopped (or --seconds)
    options.welcome = false;
    return {};
}

/// The window's flags, then the live run checked as a whole: valid settings, a known preset, a device here.
QString readLaunchChecks(const QCommandLineParser& parser, const EngineCapabilities& capabilities,
                         LaunchOptions& options) {
    const config::RunSettings& live = options.live;
    options.pressScores = parser.isSet(launcherOptionName("press-scores"));
    options.eventLog = parser.isSet(launcherOptionName("events"));
    options.compareWithoutPress = parser.isSet(launcherOptionName("compare-without-press"));
    if (options.compareWithoutPress && (live.press.name.empty() || !options.file.isEmpty() ||
                                        parser.isSet(launcherOptionName("synthetic")) || parser.isSet(launcherOptionName("compare")))) {
        return QStringLiteral("--compare-without-press goes with a live run's --press (no FILE, --synthetic or --compare)");
    }
    try {
        config::validate(live);
    } catch (const config::ConfigError& error) {
        return QString::fromStdString(error.what());
    }
    if (!live.preset.empty()) {
        const auto& names = capabilities.presets;
        if (std::find(names.begin(), names.end(), live.preset) == names.end()) {
            QStringList known;
            for (const std::string& name : names) {
                known << QString::fromStdString(name);
            }
            return QStringLiteral("unknown preset `%1` (allowed: %2)")
                .arg(QString::fromStdString(live.preset), known.join(", "));
        }
    }
    if (live.device == config::ComputeDevice::Cuda && !capabilities.cudaAvailable) {
        return QStringLiteral("device cuda is not available here (no CUDA LibTorch or no GPU visible); use --device cpu");
    }
    return {};
}

/// The screenshot: its file, the step, layer and token position it shows (non-negative, and only with --screenshot), the
/// window's size.
QString readLaunchScreenshot(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    options.screenshot = parser.value(launcherOptionName("screenshot"));
    for (const auto& [name, value] : {std::pair{"step", &options.step}, std::pair{"layer", &options.layer},
                                      std::pair{"position", &options.position}}) {
        if (!parser.isSet(launcherOptionName(name))) {
            continue;
        }
        const QString given = parser.value(launcherOptionName(name));
        *value = toInteger(given, 0);
        if (!*value) {
            return QStringLiteral("--%1 must be a non-negative integer, got `%2`").arg(launcherOptionName(name), given);
        }
        if (options.screenshot.isEmpty()) {
            return QStringLiteral("--%1 goes with --screenshot").arg(launcherOptionName(name));
        }
    }
    const QString size = parser.value(launcherOptionName("size"));
    const QRegularExpressionMatch sizeMatch = QRegularExpression(QStringLiteral("^(\\d+)x(\\d+)$")).match(size);
    if (!sizeMatch.hasMatch() || sizeMatch.captured(1).toInt() < 320 || sizeMatch.captured(2).toInt() < 240) {
        return QStringLiteral("--size must be WIDTHxHEIGHT, at least 320x240, got `%1`").arg(size);
    }
    options.size = QSize(sizeMatch.captured(1).toInt(), sizeMatch.captured(2).toInt());
    return {};
}

/// The second session to compare with, and the synthetic session's size.
QString readLaunchSessions(const QCommandLineParser& parser, const EngineCapabilities&, LaunchOptions& options) {
    options.compareFile = parser.value(launcherOptionName("compare"));
    if (!options.compareFile.isEmpty() && !QFileInfo(options.compareFile).isFile()) {
        return QStringLiteral("session file to compare not found: %1").arg(options.compareFile);
    }
    if (parser.isSet(launcherOptionName("synthetic"))) {
        const QString size = parser.value(launcherOptionName("synthetic"));
        const QRegularExpressionMatch match = QRegularExpression(QStringLiteral("^(\\d+)x(\\d+)$")).match(size);
        if (!match.hasMatch() || match.captured(1).toInt() < 1 || match.captured(2).toLongLong() < 1) {
            return QStringLiteral("--synthetic must be LAYERSxTOKENS, e.g. 32x4096, got `%1`").arg(size);
        }
        options.syntheticLayers = match.captured(1).toInt();
        options.syntheticTokens = match.captured(2).toLongLong();
    }
    return {};
}

/// How a command line becomes LaunchOptions, step by step (after the help and the tour).
constexpr LaunchStep kLaunchSteps[] = {readLaunchFile,   readLaunchRun,        readLaunchServing,   readLaunchAttach,
                                       readLaunchChecks, readLaunchScreenshot, readLaunchSessions};

} // namespace

bool AppLauncher::noDisplay() {
    return qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
           qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

std::variant<LaunchOptions, QString> AppLauncher::parse(const QStringList& arguments,
                                                         const EngineCapabilities& capabilities) {
    QCommandLineParser parser;
    addAllLauncherOptions(parser);
    if (!parser.parse(arguments)) {
        return parser.errorText();
    }
    if (parser.isSet(QStringLiteral("help"))) {
        return parser.helpText();
    }
    if (parser.isSet(launcherOptionName("tour"))) {
        // A tour is its options (resources/tours/NAME.json), read as if typed before the user's own.
        const QString name = parser.value(launcherOptionName("tour"));
        const Tour* found = TourCatalog::find(name);
        if (!found) {
            return QStringLiteral("unknown tour `%1` (allowed: %2)").arg(name, TourCatalog::names().join(QStringLiteral(", ")));
        }
        if (!parser.positionalArguments().isEmpty()) {
            return QStringLiteral("--tour runs live: give no session FILE with it");
        }
        QStringList spliced{arguments.value(0, QStringLiteral("kvscope"))};
        spliced << found->arguments;
        for (qsizetype at = 1; at < arguments.size(); ++at) {
            if (arguments.at(at) == QLatin1String("--tour")) {
                ++at;
            } else if (!arguments.at(at).startsWith(QLatin1String("--tour="))) {
                spliced << arguments.at(at);
            }
        }
        auto parsed = parse(spliced, capabilities);
        if (auto* options = std::get_if<LaunchOptions>(&parsed)) {
            options->tour = name;
        } else {
            return QStringLiteral("tour %1: %2").arg(name, std::get<QString>(parsed));
        }
        return parsed;
    }
    LaunchOptions options;
    for (const LaunchStep step : kLaunchSteps) {
        if (const QString refusal = step(parser, capabilities, options); !refusal.isEmpty()) {
            return refusal;
        }
    }
    return options;
}

bool AppLauncher::looksPainted(const QImage& image) {
    if (image.isNull() || image.width() < 2 || image.height() < 2) {
        return false;
    }
    QHash<QRgb, int> counts;
    int samples = 0;
    for (int y = 3; y < image.height(); y += 7) {
        for (int x = 3; x < image.width(); x += 7) {
            ++counts[image.pixel(x, y)];
            ++samples;
        }
    }
    int dominant = 0;
    for (const int count : counts) {
        dominant = std::max(dominant, count);
    }
    // Content, not a blank window or a frame: at least 5% of the samples differ from the commonest colour.
    return (samples - dominant) * 20 > samples;
}

std::optional<int> AppLauncher::launch(MainWindow& window, const LaunchOptions& options, QTextStream& errors) {
    const bool headless = !options.screenshot.isEmpty();
    SessionController& session = window.session();
    // Failures are read from the session's state, not caught by a connection: one made here would outlive
    // this function (the window lives on) and a later failure would write through its captures.
    if (options.welcome) {
        window.showWelcome();
    } else if (!options.file.isEmpty()) {
        if (!headless) {
            window.openFile(options.file);
        } else if (const QString error = window.openFileNow(options.file); !error.isEmpty()) {
            errors << "kvscope: cannot open " << options.file << ": " << error << Qt::endl;
            return 2;
        }
    } else if (options.syntheticLayers > 0) {
        const synthetic::SyntheticSessionOptions synthetic = synthetic::SyntheticSession::sized(
            options.syntheticLayers, options.syntheticTokens, options.live.cache.kind == config::CacheKind::Offloaded);
        // Streamed to a file and opened file-backed like any session file, so that its size is bounded by
        // the disk, not by memory; the file is unlinked once open (it lives as long as kvscope holds it).
        const QString file = QDir(QStandardPaths::writableLocation(QStandardPaths::TempLocation))
                                 .filePath(QStringLiteral("kvscope-synthetic-%1x%2-%3.kvsess")
                                               .arg(options.syntheticLayers)
                                               .arg(options.syntheticTokens)
                                               .arg(QCoreApplication::applicationPid()));
        QString error;
        try {
            synthetic::SyntheticSession::write(synthetic, file.toStdString());
            error = session.openFile(file);
        } catch (const std::exception& failure) {
            error = QString::fromStdString(failure.what());
        }
        QFile::remove(file);
        if (!error.isEmpty()) {
            errors << "kvscope: cannot write the synthetic session: " << error << Qt::endl;
            return 2;
        }
    } else if (session.canRunLive()) {
        if (headless) {
            session.startLive(options.live, SessionController::Generation::ToTheEnd);
        } else {
            window.startLive(options.live);
        }
    } else {
        errors << "kvscope: this build has no engine; open a session file instead" << Qt::endl;
        return 2;
    }
    if (options.compareWithoutPress) {
        if (const QString problem = window.comparePressWithoutIt(); !problem.isEmpty()) {
            errors << "kvscope: " << problem << Qt::endl;
            return 2;
        }
    }
    if (options.compareServing) {
        if (const QString problem = window.compareServing(*options.compareServing); !problem.isEmpty()) {
            errors << "kvscope: " << problem << Qt::endl;
            return 2;
        }
    }
    if (!options.compareFile.isEmpty()) {
        if (!headless) {
            window.compareWithFile(options.compareFile);
        } else if (const QString error = window.compareWithFileNow(options.compareFile); !error.isEmpty()) {
            errors << "kvscope: cannot open " << options.compareFile << " to compare: " << error << Qt::endl;
            return 2;
        }
    }
    if (!options.tour.isEmpty()) {
        window.followTour(options.tour);
    }
    window.scoreOverlayAction()->setChecked(options.pressScores);
    if (options.eventLog) {
        window.showEventLog();
    }
    if (!headless) {
        return std::nullopt;
    }

    // Headless: wait for a live run to finish (bounded), show the step, render.
    if (session.mode() == SessionController::Mode::Live) {
        QElapsedTimer clock;
        clock.start();
        while (!session.liveFinished() && clock.elapsed() < 600000) {
            session.waitForEngine();
        }
        if (const auto& failure = session.liveFailure()) {
            errors << "kvscope: " << failure->headline() << ": " << failure->reason << Qt::endl;
            return 2;
        }
    }
    SessionController& compared = window.compareSession();
    if (compared.mode() == SessionController::Mode::Live) {
        QElapsedTimer clock;
        clock.start();
        while (!compared.liveFinished() && clock.elapsed() < 600000) {
            compared.waitForEngine();
        }
        if (const auto& failure = compared.liveFailure()) {
            errors << "kvscope: the session to compare with failed: " << failure->headline() << ": "
                   << failure->reason << Qt::endl;
            return 2;
        }
    }
    window.resize(options.size);
    window.show();
    QCoreApplication::processEvents();
    const std::int64_t last = session.stepCount() - 1;
    if (options.welcome && options.step) {
        errors << "kvscope: --step needs a session to show (a FILE, a model, --tour or --workload)" << Qt::endl;
        return 2;
    }
    if (options.step && *options.step > last) {
        errors << "kvscope: --step " << *options.step << " is beyond the session's last step " << last << Qt::endl;
        return 2;
    }
    session.setCurrentStep(options.step.value_or(last));
    if (options.layer) {
        const std::int64_t layers = session.timeline().layerCount();
        if (*options.layer >= layers) {
            errors << "kvscope: --layer " << *options.layer << " is beyond the session's last layer "
                   << layers - 1 << Qt::endl;
            return 2;
        }
        window.selection().setSelectedLayer(static_cast<int>(*options.layer));
    }
    if (options.position) {
        window.selection().setSelectedPosition(*options.position);
    }
    QCoreApplication::processEvents();
    const QImage image = window.renderImage();
    if (!looksPainted(image)) {
        errors << "kvscope: the rendered window is blank; nothing written" << Qt::endl;
        return 1;
    }
    if (!image.save(options.screenshot)) {
        errors << "kvscope: cannot write " << options.screenshot << Qt::endl;
        return 2;
    }
    errors << "kvscope: wrote " << options.screenshot << " (" << image.width() << "x" << image.height() << ", step "
           << session.currentStep() << ")" << Qt::endl;
    return 0;
}

} // namespace kvscope::gui
