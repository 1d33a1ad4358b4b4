// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/NewSessionDialog.h"

#include "kvscope/config/PressDescriptions.h"

#include <QGroupBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>

#include <QApplication>
#include <QFile>
#include <QSpinBox>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilitiesInNewSessionDialog(bool cuda) {
    EngineCapabilities result;
    result.presets = {"gemma3", "llama", "mistral"};
    result.defaultPreset = "llama";
    result.cudaAvailable = cuda;
    result.presses = kvscope::config::PressDescriptions::all();
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
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), settings);
    EXPECT_EQ(dialog.settings(), settings);
    EXPECT_EQ(dialog.validate(), QString());
}

TEST(NewSessionDialogTest, RoundTripsDecodingAndWhatItHasNoFieldFor) {
    kvscope::config::RunSettings settings = kvscope::config::liveSessionSettings();
    settings.preset = "mistral";
    settings.temperature = 1.25;
    settings.topK = 7;
    settings.seed = 3;
    // No fields for these: they come back as they went in.
    settings.ignoreEos = true;
    settings.weightSeed = 11;
    settings.threads = 1;
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), settings);
    EXPECT_DOUBLE_EQ(dialog.temperatureBox()->value(), 1.25);
    EXPECT_EQ(dialog.topKBox()->value(), 7);
    EXPECT_EQ(dialog.settings(), settings);

    // Temperature 0 is greedy, said in the field.
    dialog.temperatureBox()->setValue(0.0);
    dialog.topKBox()->setValue(0);
    EXPECT_EQ(dialog.settings().temperature, 0.0);
    EXPECT_EQ(dialog.settings().topK, 0);
    EXPECT_EQ(dialog.temperatureBox()->text(), QStringLiteral("0 (greedy)"));
}

TEST(NewSessionDialogTest, ALiveSessionSamplesByDefault) {
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), kvscope::config::liveSessionSettings());
    EXPECT_DOUBLE_EQ(dialog.settings().temperature, 0.8);
    EXPECT_EQ(dialog.settings().topK, 40);
    EXPECT_EQ(dialog.settings().seed, 0u);
}

TEST(NewSessionDialogTest, DefaultsToTheDefaultPreset) {
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), kvscope::config::RunSettings{});
    EXPECT_EQ(dialog.settings().preset, "llama");
}

TEST(NewSessionDialogTest, RefusesWhatCannotRun) {
    kvscope::config::RunSettings settings;
    settings.device = kvscope::config::ComputeDevice::Cuda;
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), settings);
    EXPECT_TRUE(dialog.validate().contains("CUDA is not available")) << dialog.validate().toStdString();
    NewSessionDialog withCuda(capabilitiesInNewSessionDialog(true), settings);
    EXPECT_EQ(withCuda.validate(), QString());

    kvscope::config::RunSettings bits;
    bits.cache.kind = kvscope::config::CacheKind::Quantized;
    bits.cache.nbits = 3; // min-max allows 2, 4, 8
    NewSessionDialog quantized(capabilitiesInNewSessionDialog(false), bits);
    EXPECT_TRUE(quantized.validate().contains("allowed: 2, 4, 8")) << quantized.validate().toStdString();

    kvscope::config::RunSettings config;
    config.configPath = "/no/such/config.json";
    NewSessionDialog missing(capabilitiesInNewSessionDialog(false), config);
    EXPECT_TRUE(missing.validate().contains("/no/such/config.json"));
}

TEST(NewSessionDialogTest, ShowsTheTokenizerASourceBrings) {
    QTemporaryDir checkpoint;
    std::vector<std::string> asked;
    EngineCapabilities engine = capabilitiesInNewSessionDialog(false);
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

TEST(NewSessionDialogTest, OffersTheEnginesPressesWithTheirOptions) {
    kvscope::config::RunSettings settings;
    settings.press = {"snapkv", 0.25, {{"window_size", "8"}}};
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), settings);
    EXPECT_EQ(dialog.settings().press, settings.press) << "typed options round-trip, defaults stay implicit";
    EXPECT_EQ(dialog.validate(), QString());
    ASSERT_EQ(dialog.pressBox()->count(), static_cast<int>(kvscope::config::PressDescriptions::all().size()) + 1);
    EXPECT_EQ(dialog.pressBox()->itemText(0), "none");
    ASSERT_EQ(dialog.pressOptionFields().size(), 2u);
    EXPECT_EQ(dialog.pressOptionFields().at("kernel_size")->placeholderText(), "5 (default)");

    // Another press: its own options, and its defaults unless typed.
    dialog.pressBox()->setCurrentIndex(dialog.pressBox()->findData(QStringLiteral("decoding")));
    EXPECT_FALSE(dialog.ratioBox()->isEnabled()) << "a decoding press compresses to its target size";
    EXPECT_EQ(dialog.settings().press.ratio, 0.0);
    ASSERT_EQ(dialog.pressOptionFields().count("target_size"), 1u);
    EXPECT_EQ(dialog.pressOptionFields().count("window_size"), 0u) << "the default base, knorm, has no options";
    // Another base press: its options join the wrapper's, what was typed stays.
    dialog.pressOptionFields().at("compression_interval")->setText("16");
    dialog.pressOptionFields().at("base")->setText("snapkv");
    Q_EMIT dialog.pressOptionFields().at("base")->editingFinished();
    QCoreApplication::processEvents();
    ASSERT_EQ(dialog.pressOptionFields().count("window_size"), 1u);
    EXPECT_EQ(dialog.pressOptionFields().at("window_size")->placeholderText(), "64 (default)");
    dialog.pressOptionFields().at("window_size")->setText("4");
    EXPECT_EQ(dialog.settings().press.options,
              (std::map<std::string, std::string>{{"base", "snapkv"}, {"compression_interval", "16"}, {"window_size", "4"}}));
    EXPECT_EQ(dialog.validate(), QString());
    NewSessionDialog reopened(capabilitiesInNewSessionDialog(false), dialog.settings());
    EXPECT_EQ(reopened.settings().press, dialog.settings().press) << "a base's options round-trip";
    dialog.pressOptionFields().at("base")->clear();
    dialog.pressOptionFields().at("window_size")->clear();
    dialog.pressOptionFields().at("compression_interval")->clear();
    dialog.pressOptionFields().at("target_size")->setText("abc");
    EXPECT_TRUE(dialog.validate().contains("target_size=abc: expected an integer")) << dialog.validate().toStdString();
    dialog.pressOptionFields().at("target_size")->setText("64");
    EXPECT_EQ(dialog.validate(), QString());
    EXPECT_EQ(dialog.settings().press.name, "decoding");
    EXPECT_EQ(dialog.settings().press.options, (std::map<std::string, std::string>{{"target_size", "64"}}));

    dialog.pressBox()->setCurrentIndex(0);
    EXPECT_TRUE(dialog.settings().press.name.empty());
    EXPECT_EQ(dialog.settings().press.ratio, 0.0) << "no ratio without a press";
    EXPECT_FALSE(dialog.ratioBox()->isEnabled());
    EXPECT_TRUE(dialog.pressOptionFields().empty());

    // From no press, picking a prefill press starts at half the prefill cache.
    NewSessionDialog fresh(capabilitiesInNewSessionDialog(false), kvscope::config::RunSettings{});
    fresh.pressBox()->setCurrentIndex(fresh.pressBox()->findData(QStringLiteral("knorm")));
    EXPECT_TRUE(fresh.ratioBox()->isEnabled());
    EXPECT_EQ(fresh.settings().press, (kvscope::config::PressSettings{"knorm", 0.5, {}}));
}

} // namespace
} // namespace kvscope::gui

namespace kvscope::gui {
namespace {

TEST(NewSessionDialogTest, ServingPicksAWorkloadAndThePool) {
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), config::RunSettings{});
    EXPECT_FALSE(dialog.servingBox()->isChecked());
    EXPECT_FALSE(dialog.settings().serving.has_value());
    // Every built-in workload is offered, the chat with a shared system prompt first chosen.
    EXPECT_GE(dialog.workloadBox()->findText("burst-preemption"), 0);
    EXPECT_EQ(dialog.workloadBox()->currentText(), "chat-shared-system-prompt");
    dialog.servingBox()->setChecked(true);
    ASSERT_TRUE(dialog.settings().serving.has_value());
    // The chat's own pool (28 blocks of 16, resources/workloads/chat-shared-system-prompt.json) is filled in.
    EXPECT_EQ(*dialog.settings().serving,
              (config::ServingSettings{"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}));
    EXPECT_EQ(dialog.validate(), QString());

    config::RunSettings settings;
    settings.preset = "llama";
    settings.serving = config::ServingSettings{"rag-shared-document", 4, 20, 32, 2, false, "current"};
    settings.tokens = 1 << 20;
    dialog.setSettings(settings);
    EXPECT_TRUE(dialog.servingBox()->isChecked());
    EXPECT_EQ(dialog.settings().serving, settings.serving);
    EXPECT_EQ(dialog.settings().tokens, 1 << 20);

    dialog.workloadBox()->setCurrentText("no-such-workload");
    EXPECT_TRUE(dialog.validate().contains("no-such-workload")) << dialog.validate().toStdString();
}

// Picking a workload fills in the pool it suggests and says so; a workload that names no pool gives the
// defaults back; the fields stay the user's to change.
TEST(NewSessionDialogTest, PickingAWorkloadFillsInItsSuggestedPool) {
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), config::RunSettings{});
    dialog.servingBox()->setChecked(true);
    EXPECT_EQ(dialog.suggestedPoolText(),
              "The pool this workload suggests is filled in below: 28 blocks of 16 "
              "tokens, 256 tokens a step, at most 8 running.");
    struct Case {
        const char* workload;
        config::ServingSettings expected;
    };
    const Case cases[] = {
        {"burst-preemption", {"burst-preemption", 4, 48, 256, 8, true, "document"}},
        {"rag-shared-document", {"rag-shared-document", 16, 64, 128, 8, true, "document"}},
        {"prefix-caching-example", {"prefix-caching-example", 4, 10, 256, 8, true, "document"}},
        {"chat-shared-system-prompt", {"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}},
    };
    QComboBox* workloads = dialog.workloadBox();
    for (const Case& c : cases) {
        workloads->setCurrentIndex(workloads->findText(QString::fromLatin1(c.workload)));
        ASSERT_TRUE(dialog.settings().serving.has_value());
        EXPECT_EQ(*dialog.settings().serving, c.expected) << c.workload;
    }
    QSpinBox* pool = dialog.numBlocksBox();
    EXPECT_EQ(pool->value(), 28);
    pool->setValue(40);
    EXPECT_EQ(dialog.settings().serving->numBlocks, 40) << "the suggestion is the user's to change";

    // A workload file with no pool: the defaults, said so.
    QTemporaryDir dir;
    const QString path = dir.filePath("w.json");
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write(R"({"requests": [{"id": "a", "prompt": "x"}]})");
    file.close();
    workloads->setCurrentText(path);
    EXPECT_EQ(*dialog.settings().serving, (config::ServingSettings{path.toStdString()}));
    EXPECT_EQ(dialog.suggestedPoolText(),
              "This workload suggests no pool: the defaults are filled in below.");
}

// The picked workload says what it shows (its file's description), and "Compare with" asks for a second run
// of the same workload with one change.
TEST(NewSessionDialogTest, ServingShowsTheWorkloadsDescriptionAndOffersACompareRun) {
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), config::RunSettings{});
    EXPECT_TRUE(dialog.workloadDescription().startsWith("A chat service"))
        << dialog.workloadDescription().toStdString();
    dialog.workloadBox()->setCurrentText("burst-preemption");
    EXPECT_FALSE(dialog.workloadDescription().isEmpty());
    EXPECT_FALSE(dialog.workloadDescription().startsWith("A chat service"));
    dialog.workloadBox()->setCurrentText("/no/such/workload.json");
    EXPECT_TRUE(dialog.workloadDescription().isEmpty());

    config::RunSettings settings;
    settings.serving = config::ServingSettings{"prefix-caching-example", 8, 20, 32, 2, true, "document"};
    dialog.setSettings(settings);
    QComboBox* compare = dialog.compareWithBox();
    EXPECT_FALSE(dialog.compareServing().has_value()) << "nothing to compare with by default";
    struct Case {
        const char* choice;
        config::ServingSettings expected;
    };
    const Case cases[] = {
        {"prefix-caching", {"prefix-caching-example", 8, 20, 32, 2, false, "document"}},
        {"half-pool", {"prefix-caching-example", 8, 10, 32, 2, true, "document"}},
        {"twice-pool", {"prefix-caching-example", 8, 40, 32, 2, true, "document"}},
        {"half-blocks", {"prefix-caching-example", 4, 20, 32, 2, true, "document"}},
    };
    for (const Case& c : cases) {
        compare->setCurrentIndex(compare->findData(QString::fromLatin1(c.choice)));
        ASSERT_TRUE(dialog.compareServing().has_value()) << c.choice;
        EXPECT_EQ(*dialog.compareServing(), c.expected) << c.choice;
    }
    dialog.servingBox()->setChecked(false);
    EXPECT_FALSE(dialog.compareServing().has_value()) << "a session that does not serve compares otherwise";
}

} // namespace
} // namespace kvscope::gui
