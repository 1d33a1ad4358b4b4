// SPDX-License-Identifier: GPL-3.0-or-later
// Tours: the trigger grammar, the tour file's errors, the guide's trigger steps over a hand-made
// timeline, and the built-in catalogue (every tour loads and its options parse as kvscope's own).
#include "kvscope/gui/tours/TourGuide.h"

#include "kvscope/gui/tours/TourCatalog.h"
#include "kvscope/gui/window/AppLauncher.h"
#include "kvscope/trace/Timeline.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

TEST(TourGuideTest, TriggerGrammar) {
    struct Case {
        const char* text;
        TourTrigger::Kind kind;
        std::int64_t step;
        const char* event;
        std::optional<std::int32_t> layer;
    };
    const Case cases[] = {
        {"prefill", TourTrigger::Kind::Prefill, 0, "", std::nullopt},
        {"step 12", TourTrigger::Kind::Step, 12, "", std::nullopt},
        {" last ", TourTrigger::Kind::Last, 0, "", std::nullopt},
        {"first window_slide", TourTrigger::Kind::FirstEvent, 0, "window_slide", std::nullopt},
        {"first quantize_flush layer 3", TourTrigger::Kind::FirstEvent, 0, "quantize_flush", 3},
    };
    for (const Case& c : cases) {
        QString error;
        const auto trigger = TourTrigger::parse(QString::fromLatin1(c.text), &error);
        ASSERT_TRUE(trigger) << c.text << ": " << error.toStdString();
        EXPECT_EQ(trigger->kind, c.kind) << c.text;
        EXPECT_EQ(trigger->step, c.step) << c.text;
        EXPECT_EQ(trigger->event, QString::fromLatin1(c.event)) << c.text;
        EXPECT_EQ(trigger->layer, c.layer) << c.text;
    }
    const std::pair<const char*, const char*> refused[] = {
        {"first window_slid", "unknown event `window_slid` (allowed: update, mask_sizes, window_slide,"},
        {"step -1",
         "`step -1` is not a time (allowed: prefill, step N, first EVENT, first EVENT layer L, last)"},
        {"soon", "`soon` is not a time"},
    };
    for (const auto& [text, message] : refused) {
        QString error;
        EXPECT_FALSE(TourTrigger::parse(QString::fromLatin1(text), &error)) << text;
        EXPECT_TRUE(error.startsWith(QString::fromLatin1(message))) << error.toStdString();
    }
}

TEST(TourGuideTest, TourFileErrorsNameTheField) {
    const std::pair<const char*, const char*> cases[] = {
        {"[]", "tour t: not a JSON object"},
        {R"({"title": "T"})", "tour t: needs a \"title\" and a \"summary\" (text)"},
        {R"({"title": "T", "summary": "S", "arguments": [1]})",
         "tour t: \"arguments\" must be a list of texts"},
        {R"({"title": "T", "summary": "S", "notes": []})", "tour t: needs at least one note in \"notes\""},
        {R"({"title": "T", "summary": "S", "notes": [{"when": "prefill"}]})",
         "tour t: note 1 has no \"text\""},
        {R"({"title": "T", "summary": "S", "notes": [{"when": "prefill", "text": "a"}, {"when": "later", "text": "b"}]})",
         "tour t: note 2: `later` is not a time"},
    };
    for (const auto& [json, message] : cases) {
        const auto parsed = Tour::fromJson(QStringLiteral("t"), QByteArray(json));
        ASSERT_TRUE(std::holds_alternative<QString>(parsed)) << json;
        EXPECT_TRUE(std::get<QString>(parsed).startsWith(QString::fromLatin1(message)))
            << std::get<QString>(parsed).toStdString();
    }
}

trace::Event event(std::int64_t step, std::int32_t layer, trace::EventPayload payload) {
    trace::Event result;
    result.step = step;
    result.layer = layer;
    result.payload = std::move(payload);
    return result;
}

TEST(TourGuideTest, NotesApplyFromTheStepTheirTriggerHappened) {
    const auto parsed =
        Tour::fromJson(QStringLiteral("t"), QByteArray(R"({"title": "T", "summary": "S", "notes": [
        {"when": "last", "text": "done at {step}"},
        {"when": "first window_slide", "text": "full at {step}"},
        {"when": "prefill", "text": "start"},
        {"when": "first window_slide layer 0", "text": "layer 0 never slides"},
        {"when": "step 4", "text": "four"},
        {"when": "first quantize_flush", "text": "flush at {step}"}]})"));
    ASSERT_TRUE(std::holds_alternative<Tour>(parsed)) << std::get<QString>(parsed).toStdString();
    const Tour tour = std::get<Tour>(parsed);
    TourGuide guide;
    guide.setTour(&tour);
    trace::Timeline timeline;
    for (std::int64_t step = 0; step <= 3; ++step) {
        timeline.emit(event(step, 0, trace::StepBeginEvent{}));
    }
    timeline.emit(event(3, 1, trace::WindowSlideEvent{}));
    guide.update(timeline, false);
    using Steps = std::vector<std::optional<std::int64_t>>;
    EXPECT_EQ(guide.triggerSteps(), (Steps{std::nullopt, 3, 0, std::nullopt, std::nullopt, std::nullopt}));
    // A live session grows: the step it was on is read again, later ones for the first time.
    timeline.emit(event(3, 1, trace::QuantizeFlushEvent{}));
    for (std::int64_t step = 4; step <= 7; ++step) {
        timeline.emit(event(step, 0, trace::StepBeginEvent{}));
    }
    timeline.emit(event(6, 1, trace::WindowSlideEvent{}));
    guide.update(timeline, false);
    EXPECT_EQ(guide.triggerSteps(), (Steps{std::nullopt, 3, 0, std::nullopt, 4, 3}));
    guide.update(timeline, true);
    EXPECT_EQ(guide.triggerSteps(), (Steps{7, 3, 0, std::nullopt, 4, 3}));
    EXPECT_EQ(guide.notesAt(3), (std::vector<std::size_t>{2, 1, 5}));
    EXPECT_EQ(guide.notesAt(7), (std::vector<std::size_t>{2, 1, 5, 4, 0}));
    EXPECT_EQ(guide.notesAfter(3), 3u);
    EXPECT_EQ(guide.textOf(1), QStringLiteral("full at 3"));
    EXPECT_EQ(guide.textOf(0), QStringLiteral("done at 7"));
}

// The presets this checkout has (the engine's list, without loading the engine).
EngineCapabilities realCapabilities() {
    EngineCapabilities capabilities;
    for (const QString& name : QDir(QStringLiteral(KVSCOPE_SOURCE_DIR "/resources/presets"))
                                   .entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
        capabilities.presets.push_back(name.chopped(5).toStdString());
    }
    capabilities.defaultPreset = "llama";
    return capabilities;
}

TEST(TourGuideTest, EveryBuiltInTourLoadsAndParsesAsKvscopeOptions) {
    EXPECT_TRUE(TourCatalog::problems().isEmpty()) << TourCatalog::problems().join('\n').toStdString();
    // The tours the front door promises, in order: the real models' first.
    EXPECT_EQ(TourCatalog::names(),
              (QStringList{"gemma3-long-text", "gemma3-speculative-rollback", "real-model-attention", "llamacpp-quantized-cache", "sliding-window", "hybrid-sliding-full", "quantized-2bit", "offloading-prefetch",
                           "snapkv-vs-none", "h2o-decoding", "linear-attention-hybrid", "encoder-decoder",
                           "prefix-sharing", "preemption"}));
    for (const Tour& tour : TourCatalog::tours()) {
        // A tour on a real model says in its first step which model it runs, and why that one.
        if (tour.arguments.contains(QStringLiteral("--model"))) {
            ASSERT_FALSE(tour.notes.empty()) << tour.name.toStdString();
            EXPECT_TRUE(tour.notes.front().text.startsWith(QStringLiteral("this tour runs ")) &&
                        tour.notes.front().text.contains(QStringLiteral(" because ")))
                << tour.name.toStdString() << ": " << tour.notes.front().text.toStdString();
        }
        const auto parsed = AppLauncher::parse(
            {QStringLiteral("kvscope"), QStringLiteral("--tour"), tour.name}, realCapabilities());
        ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
        const LaunchOptions& options = std::get<LaunchOptions>(parsed);
        EXPECT_EQ(options.tour, tour.name);
        EXPECT_FALSE(options.welcome);
        EXPECT_TRUE(options.file.isEmpty());
    }
}

TEST(TourGuideTest, ListJsonNamesPresetAndSettings) {
    const QJsonArray list = QJsonDocument::fromJson(TourCatalog::listJson(QStringLiteral("llama"))).array();
    ASSERT_EQ(list.size(), static_cast<qsizetype>(TourCatalog::tours().size()));
    QJsonObject sliding, quantized, snapkv, sharing;
    for (const QJsonValue& value : list) {
        const QJsonObject tour = value.toObject();
        const QString name = tour.value("name").toString();
        if (name == "sliding-window") {
            sliding = tour;
        } else if (name == "quantized-2bit") {
            quantized = tour;
        } else if (name == "snapkv-vs-none") {
            snapkv = tour;
        } else if (name == "prefix-sharing") {
            sharing = tour;
        }
    }
    EXPECT_EQ(sliding.value("preset").toString(), "mistral");
    EXPECT_EQ(sliding.value("title").toString(), "Sliding window: the oldest tokens leave");
    EXPECT_EQ(sliding.value("settings").toObject(),
              (QJsonObject{{"temperature", "0.8"}, {"top-k", "40"}, {"prompt", "Hi"}, {"tokens", "40"}}));
    EXPECT_EQ(quantized.value("settings").toObject().value("nbits").toString(), "2");
    EXPECT_EQ(snapkv.value("settings").toObject().value("compare-without-press").toBool(), true);
    // No --preset: the default preset serves the workload.
    EXPECT_EQ(sharing.value("preset").toString(), "llama");
    EXPECT_EQ(sharing.value("settings").toObject().value("workload").toString(), "chat-shared-system-prompt");
}

TEST(TourGuideTest, LauncherTourOptionsAndWelcome) {
    const EngineCapabilities capabilities = realCapabilities();
    const auto error = [&](const QStringList& arguments) {
        const auto parsed = AppLauncher::parse(QStringList{"kvscope"} + arguments, capabilities);
        return std::holds_alternative<QString>(parsed) ? std::get<QString>(parsed) : QString();
    };
    EXPECT_TRUE(error({"--tour", "nope"})
                    .startsWith("unknown tour `nope` (allowed: gemma3-long-text, gemma3-speculative-rollback, real-model-attention, llamacpp-quantized-cache,"));
    EXPECT_EQ(error({"--tour", "sliding-window", KVSCOPE_SOURCE_DIR "/sessions/llama-dynamic.kvsess"}),
              "--tour runs live: give no session FILE with it");
    // Options after --tour change the tour's settings.
    const auto longer =
        AppLauncher::parse({"kvscope", "--tour", "sliding-window", "--tokens", "7"}, capabilities);
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(longer));
    EXPECT_EQ(std::get<LaunchOptions>(longer).live.tokens, 7);
    EXPECT_EQ(std::get<LaunchOptions>(longer).live.preset, "mistral");
    EXPECT_EQ(std::get<LaunchOptions>(longer).live.prompt, "Hi");
    // Nothing to show: the welcome page; any run option asks for a live session instead.
    const std::pair<QStringList, bool> welcome[] = {
        {{}, true},
        {{"--screenshot", "w.png", "--size", "800x600"}, true},
        {{"--cache", "quantized"}, false},
        {{"--preset", "gemma3"}, false},
        {{KVSCOPE_SOURCE_DIR "/sessions/llama-dynamic.kvsess"}, false},
        {{"--synthetic", "4x10"}, false},
    };
    for (const auto& [arguments, expected] : welcome) {
        const auto parsed = AppLauncher::parse(QStringList{"kvscope"} + arguments, capabilities);
        ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << arguments.join(' ').toStdString();
        EXPECT_EQ(std::get<LaunchOptions>(parsed).welcome, expected) << arguments.join(' ').toStdString();
    }
}

} // namespace
} // namespace kvscope::gui
