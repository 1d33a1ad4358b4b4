// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/NewSessionDialog.h"

#include "kvscope/config/ConfigError.h"
#include "kvscope/paged/ServingOptionTable.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <variant>

namespace kvscope::gui {
namespace {

/// The ratio offered once a prefill press is picked: half of each layer's prefill cache.
constexpr double kDefaultPressRatio = 0.5;

/// Lists an enum's names from its name table, the enum value as item data; `note` may add to a name.
template <typename Enum>
void addEnumItems(QComboBox* combo, const std::function<QString(Enum)>& note = {}) {
    for (int value = 0; value <= static_cast<int>(Enum::Last); ++value) {
        const auto item = static_cast<Enum>(value);
        combo->addItem(QString::fromUtf8(config::toString(item)) + (note ? note(item) : QString()), value);
    }
}

QSpinBox* spin(int minimum, int maximum, int value) {
    auto* box = new QSpinBox;
    box->setRange(minimum, maximum);
    box->setValue(value);
    return box;
}

/// One row of a form: its label (a text, or a widget: the model source's radio buttons) and its field.
struct DialogFormRow {
    std::variant<QString, QWidget*> label;
    QWidget* field;
};

/// A group box laid out as a form of `rows`, in order.
QFormLayout* dialogForm(QGroupBox* box, std::initializer_list<DialogFormRow> rows) {
    auto* layout = new QFormLayout(box);
    for (const DialogFormRow& row : rows) {
        if (const QString* text = std::get_if<QString>(&row.label)) {
            layout->addRow(*text, row.field);
        } else {
            layout->addRow(std::get<QWidget*>(row.label), row.field);
        }
    }
    return layout;
}

/// A path field with its Browse… button: the chosen path is typed in, `radio` (may be null) checked and
/// `chosen` (may be empty) told. `filter` empty asks for a folder.
struct BrowsedPath {
    QLineEdit* edit;
    QRadioButton* radio;
    QString title;
    QString filter;
    std::function<void()> chosen;
};

QWidget* withBrowse(QWidget* dialog, const BrowsedPath& path) {
    auto* browse = new QPushButton(NewSessionDialog::tr("Browse…"));
    QObject::connect(browse, &QPushButton::clicked, dialog, [dialog, path] {
        const QString chosen = path.filter.isEmpty()
                                   ? QFileDialog::getExistingDirectory(dialog, path.title)
                                   : QFileDialog::getOpenFileName(dialog, path.title, {}, path.filter);
        if (chosen.isEmpty()) {
            return;
        }
        path.edit->setText(chosen);
        if (path.radio) {
            path.radio->setChecked(true);
        }
        if (path.chosen) {
            path.chosen();
        }
    });
    auto* row = new QWidget;
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(path.edit, 1);
    layout->addWidget(browse);
    return row;
}

} // namespace

NewSessionDialog::NewSessionDialog(const EngineCapabilities& capabilities, const config::RunSettings& initial,
                                   QWidget* parent)
    : QDialog(parent), m_capabilities(capabilities), m_usePreset(new QRadioButton(tr("Preset"))),
      m_useConfig(new QRadioButton(tr("config.json"))),
      m_useCheckpoint(new QRadioButton(tr("Checkpoint folder"))),
      m_useModelFile(new QRadioButton(tr("GGUF model file"))), m_preset(new QComboBox),
      m_configPath(new QLineEdit), m_checkpointDir(new QLineEdit), m_modelFile(new QLineEdit),
      m_chat(new QCheckBox(tr("as a chat message (the model's chat template)"))), m_tokenizerPath(new QLineEdit),
      m_tokenizer(new QLabel), m_cacheKind(new QComboBox), m_backend(new QComboBox), m_nbits(spin(1, 8, 4)),
      m_group(spin(0, 4096, 0)), m_residual(spin(1, 1 << 20, 128)), m_maxCacheLen(spin(0, 1 << 20, 0)),
      m_typeK(new QComboBox), m_typeV(new QComboBox),
      m_attnRotation(new QCheckBox(tr("rotate quantised K and V (Walsh-Hadamard), as llama.cpp does"))),
      m_prompt(new QLineEdit), m_tokens(spin(1, 1 << 20, 32)), m_temperature(new QDoubleSpinBox),
      m_topK(spin(0, 1 << 20, 40)), m_seed(spin(0, 1 << 30, 0)), m_device(new QComboBox),
      m_press(new QComboBox), m_ratio(new QDoubleSpinBox), m_pressLayout(nullptr) {
    setWindowTitle(tr("New live session"));
    QGroupBox* model = modelGroup();
    QGroupBox* cache = cacheGroup();
    QGroupBox* press = pressGroup();
    QGroupBox* run = runGroup();
    servingGroup();

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Start"));
    connect(buttons, &QDialogButtonBox::accepted, this, &NewSessionDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &NewSessionDialog::reject);
    auto* layout = new QVBoxLayout(this);
    for (QWidget* part : std::initializer_list<QWidget*>{model, cache, press, run, m_serving, buttons}) {
        layout->addWidget(part);
    }

    for (QRadioButton* radio : {m_usePreset, m_useConfig, m_useCheckpoint, m_useModelFile}) {
        connect(radio, &QRadioButton::toggled, this, &NewSessionDialog::updateEnabled);
        connect(radio, &QRadioButton::toggled, this, [this](bool on) {
            if (on) {
                describeTokenizer();
            }
        });
    }
    connect(m_cacheKind, &QComboBox::currentIndexChanged, this, &NewSessionDialog::updateEnabled);
    setSettings(initial);
}

QGroupBox* NewSessionDialog::modelGroup() {
    for (const std::string& name : m_capabilities.presets) {
        m_preset->addItem(QString::fromStdString(name));
    }
    m_configPath->setPlaceholderText(tr("a Hugging Face config.json (built-in weights)"));
    m_checkpointDir->setPlaceholderText(tr("a folder with config.json and *.safetensors"));
    m_modelFile->setPlaceholderText(tr("a llama.cpp .gguf file, or a known model's name (below)"));
    m_tokenizerPath->setPlaceholderText(tr("for a preset or config.json: tokenizer.json, tokenizer.model or a folder"));
    m_tokenizer->setWordWrap(true);
    m_tokenizer->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const auto describe = [this] { describeTokenizer(); };
    QWidget* config = withBrowse(this, {m_configPath, m_useConfig, tr("Model config"), tr("config.json (*.json)"), {}});
    QWidget* checkpoint = withBrowse(this, {m_checkpointDir, m_useCheckpoint, tr("Checkpoint folder"), {}, describe});
    QWidget* modelFile =
        withBrowse(this, {m_modelFile, m_useModelFile, tr("GGUF model"), tr("GGUF models (*.gguf)"), {}});
    QWidget* tokenizer =
        withBrowse(this, {m_tokenizerPath, nullptr, tr("Tokenizer"),
                          tr("Tokenizers (tokenizer.json tokenizer.model *.json *.model)"), describe});
    // Reading a tokenizer takes a moment: described once a path is chosen, not per keystroke.
    for (QLineEdit* edit : {m_checkpointDir, m_tokenizerPath}) {
        connect(edit, &QLineEdit::editingFinished, this, &NewSessionDialog::describeTokenizer);
    }
    auto* model = new QGroupBox(tr("Model"));
    dialogForm(model, {{m_usePreset, m_preset},
                       {m_useConfig, config},
                       {m_useCheckpoint, checkpoint},
                       {m_useModelFile, modelFile},
                       {tr("Known models"), knownModels()},
                       {tr("Tokenizer"), tokenizer},
                       {tr("Text"), m_tokenizer}});
    return model;
}

QString NewSessionDialog::knownModelState(const config::KnownModel& model) {
    return config::ModelFileLocator::installed(model)
               ? tr("installed")
               : tr("not installed: %1 (downloads %2)")
                     .arg(QString::fromStdString(model.install), QString::fromStdString(model.download));
}

QWidget* NewSessionDialog::knownModels() {
    // Asked as the dialog opens: a model installed while kvscope runs shows at the next opening.
    auto* list = new QWidget;
    auto* rows = new QGridLayout(list);
    rows->setContentsMargins(0, 0, 0, 0);
    int row = 0;
    for (const config::KnownModel& known : config::ModelFileLocator::known()) {
        auto* label = new QLabel(QStringLiteral("<b>%1</b> %2 — %3")
                                     .arg(QString::fromStdString(known.name).toHtmlEscaped(),
                                          QString::fromStdString(known.title).toHtmlEscaped(),
                                          knownModelState(known).toHtmlEscaped()));
        label->setWordWrap(true);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        auto* use = new QPushButton(tr("Use"));
        use->setToolTip(tr("Run %1 (--model %2)").arg(QString::fromStdString(known.title), QString::fromStdString(known.name)));
        connect(use, &QPushButton::clicked, this, [this, name = QString::fromStdString(known.name)] {
            m_modelFile->setText(name);
            m_useModelFile->setChecked(true);
        });
        rows->addWidget(label, row, 0);
        rows->addWidget(use, row, 1);
        m_knownModelLines << QStringLiteral("%1 %2 — %3").arg(QString::fromStdString(known.name),
                                                           QString::fromStdString(known.title), knownModelState(known));
        m_knownModelButtons.push_back(use);
        ++row;
    }
    rows->setColumnStretch(0, 1);
    return list;
}

QGroupBox* NewSessionDialog::cacheGroup() {
    addEnumItems<config::CacheKind>(m_cacheKind);
    addEnumItems<config::QuantizerBackend>(m_backend);
    m_group->setSpecialValueText(tr("head dim"));
    m_maxCacheLen->setSpecialValueText(tr("prompt + tokens"));
    // llama.cpp's cache: its -ctk/-ctv types, f16 its default.
    for (QComboBox* types : {m_typeK, m_typeV}) {
        for (const std::string& type : config::llamaCppCacheTypes()) {
            types->addItem(QString::fromStdString(type), QString::fromStdString(type));
        }
    }
    auto* cache = new QGroupBox(tr("Cache"));
    dialogForm(cache, {{tr("Kind"), m_cacheKind},
                       {tr("Quantizer"), m_backend},
                       {tr("Bits"), m_nbits},
                       {tr("Group size"), m_group},
                       {tr("Residual length"), m_residual},
                       {tr("Static length"), m_maxCacheLen},
                       {tr("llama.cpp K type"), m_typeK},
                       {tr("llama.cpp V type"), m_typeV},
                       {QString(), m_attnRotation}});
    return cache;
}

QGroupBox* NewSessionDialog::pressGroup() {
    // The presses as the engine lists them, "none" first; each one's summary as its tooltip.
    m_press->addItem(tr("none"), QString());
    for (const config::PressDescription& press : m_capabilities.presses) {
        m_press->addItem(QString::fromStdString(press.name), QString::fromStdString(press.name));
        // The registration's own words: who it is, what it does, when, and whether it saves memory.
        QString tip =
            QStringLiteral("%1: %2 (%3, %4)")
                .arg(QString::fromStdString(press.displayName), QString::fromStdString(press.summary),
                     QString::fromStdString(press.kind), QString::fromStdString(press.phase));
        if (!press.policy.savesMemory()) {
            tip += tr("; it %1, which saves no memory").arg(QString::fromStdString(press.policy.effect));
        }
        m_press->setItemData(m_press->count() - 1, tip, Qt::ToolTipRole);
    }
    m_ratio->setRange(0.0, 0.99);
    m_ratio->setSingleStep(0.05);
    m_ratio->setDecimals(2);
    m_ratio->setToolTip(tr("Share of each layer's prefill cache a prefill press removes"));
    auto* press = new QGroupBox(tr("Cache press"));
    m_pressLayout = dialogForm(press, {{tr("Press"), m_press}, {tr("Ratio"), m_ratio}});
    connect(m_press, &QComboBox::currentIndexChanged, this, [this] {
        rebuildPressOptions({});
        updateEnabled();
    });
    return press;
}

QGroupBox* NewSessionDialog::runGroup() {
    const bool cuda = m_capabilities.cudaAvailable;
    addEnumItems<config::ComputeDevice>(m_device, [cuda](config::ComputeDevice device) {
        const bool unavailable = device == config::ComputeDevice::Cuda && !cuda;
        return unavailable ? tr(" (not available)") : QString();
    });
    m_temperature->setRange(0.0, 10.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setDecimals(2);
    m_temperature->setSpecialValueText(tr("0 (greedy)"));
    m_temperature->setToolTip(tr("Sampling temperature; 0 picks the likeliest token every step (greedy)"));
    m_topK->setSpecialValueText(tr("0 (every token)"));
    m_topK->setToolTip(tr("Sample among the k likeliest tokens; 0 = among all of them"));
    m_seed->setToolTip(tr("Seed of the sampling: the same seed writes the same text"));
    auto* run = new QGroupBox(tr("Run"));
    dialogForm(run, {{tr("Prompt"), m_prompt},
                     {QString(), m_chat},
                     {tr("New tokens"), m_tokens},
                     {tr("Temperature"), m_temperature},
                     {tr("Top-k"), m_topK},
                     {tr("Seed"), m_seed},
                     {tr("Device"), m_device}});
    return run;
}

QGroupBox* NewSessionDialog::servingGroup() {
    // Serving: many requests over one paged pool (docs/paged.md); the model above serves them.
    m_serving = new QGroupBox(tr("Serving: a workload over a paged KV cache"));
    m_serving->setCheckable(true);
    m_serving->setChecked(false);
    m_workload = new QComboBox;
    m_workload->setEditable(true);
    m_workload->setToolTip(tr("A built-in workload, or the path of a workload file (docs/workloads.md)"));
    try {
        for (const std::string& name : paged::WorkloadCatalog::names()) {
            m_workload->addItem(QString::fromStdString(name));
        }
    } catch (const std::exception&) {
        // No built-in folder: a file path still works.
    }
    // What the workload is for, from its own file: its description says what it shows and with which pool.
    m_workloadDescription = new QLabel;
    m_workloadDescription->setWordWrap(true);
    m_workloadDescription->setMaximumWidth(520);
    m_blockSize = spin(1, 4096, 16);
    m_numBlocks = spin(1, 1 << 20, 64);
    m_budget = spin(1, 1 << 20, 256);
    m_maxSeqs = spin(1, 4096, 8);
    // Picking a workload fills in the pool it suggests (the fields below stay the user's to change).
    m_suggestedPool = new QLabel;
    m_suggestedPool->setWordWrap(true);
    m_suggestedPool->setMaximumWidth(520);
    connect(m_workload, &QComboBox::currentTextChanged, this, &NewSessionDialog::workloadPicked);
    {
        const QSignalBlocker quiet(m_workload);
        m_workload->setCurrentIndex(
            std::max(0, m_workload->findText(QStringLiteral("chat-shared-system-prompt"))));
    }
    workloadPicked(m_workload->currentText());
    m_prefixCaching = new QCheckBox(tr("share cached prompt blocks between requests"));
    m_prefixCaching->setChecked(true);
    m_freePolicy = new QComboBox;
    m_freePolicy->addItem(tr("document (vLLM's design document)"), QStringLiteral("document"));
    m_freePolicy->addItem(tr("current (vLLM's code: null block, unhashed blocks reused first)"), QStringLiteral("current"));
    // Compare mode from the start: the same workload served a second time with one change (the changes
    // are paged::ServingOptionTable's, as --compare-serving reads them).
    m_compareWith = new QComboBox;
    m_compareWith->addItem(tr("nothing"), QString());
    m_compareWith->addItem(tr("the same with prefix caching flipped"), QStringLiteral("prefix-caching"));
    m_compareWith->addItem(tr("the same with half the pool"), QStringLiteral("half-pool"));
    m_compareWith->addItem(tr("the same with twice the pool"), QStringLiteral("twice-pool"));
    m_compareWith->addItem(tr("the same with blocks half as large"), QStringLiteral("half-blocks"));
    m_compareWith->setToolTip(tr("Also serve the workload with this change and compare the two side by side "
                                 "(steps to finish, hit rate, preemptions, evictions, peak pool usage)"));
    dialogForm(m_serving, {{tr("Workload"), m_workload},
                           {QString(), m_workloadDescription},
                           {QString(), m_suggestedPool},
                           {tr("Block size (tokens)"), m_blockSize},
                           {tr("Pool size (blocks)"), m_numBlocks},
                           {tr("Token budget per step"), m_budget},
                           {tr("Most running requests"), m_maxSeqs},
                           {tr("Prefix caching"), m_prefixCaching},
                           {tr("Free policy"), m_freePolicy},
                           {tr("Compare with"), m_compareWith}});
    connect(m_serving, &QGroupBox::toggled, this, &NewSessionDialog::updateEnabled);
    return m_serving;
}

void NewSessionDialog::setSettings(const config::RunSettings& settings) {
    m_shown = settings;
    // Enabled states and the tokenizer are brought up to date once, below, not per toggled radio.
    const QSignalBlocker presetSignals(m_usePreset);
    const QSignalBlocker configSignals(m_useConfig);
    const QSignalBlocker checkpointSignals(m_useCheckpoint);
    const QSignalBlocker modelFileSignals(m_useModelFile);
    if (!settings.modelFile.empty()) {
        m_useModelFile->setChecked(true);
    } else if (!settings.checkpointDir.empty()) {
        m_useCheckpoint->setChecked(true);
    } else if (!settings.configPath.empty()) {
        m_useConfig->setChecked(true);
    } else {
        m_usePreset->setChecked(true);
    }
    const QString preset =
        QString::fromStdString(settings.preset.empty() ? m_capabilities.defaultPreset : settings.preset);
    m_preset->setCurrentIndex(std::max(0, m_preset->findText(preset)));
    m_configPath->setText(QString::fromStdString(settings.configPath));
    m_checkpointDir->setText(QString::fromStdString(settings.checkpointDir));
    m_modelFile->setText(QString::fromStdString(settings.modelFile));
    m_chat->setChecked(settings.chat);
    m_tokenizerPath->setText(QString::fromStdString(settings.tokenizerPath));
    m_cacheKind->setCurrentIndex(std::max(0, m_cacheKind->findData(static_cast<int>(settings.cache.kind))));
    m_backend->setCurrentIndex(std::max(0, m_backend->findData(static_cast<int>(settings.cache.backend))));
    m_nbits->setValue(settings.cache.nbits);
    m_group->setValue(static_cast<int>(settings.cache.groupSize));
    m_residual->setValue(static_cast<int>(settings.cache.residualLength));
    m_maxCacheLen->setValue(static_cast<int>(settings.cache.maxCacheLen));
    m_typeK->setCurrentIndex(std::max(0, m_typeK->findData(QString::fromStdString(settings.cache.typeK))));
    m_typeV->setCurrentIndex(std::max(0, m_typeV->findData(QString::fromStdString(settings.cache.typeV))));
    m_attnRotation->setChecked(settings.cache.attnRotation);
    m_prompt->setText(QString::fromStdString(settings.prompt));
    m_tokens->setValue(static_cast<int>(settings.tokens));
    m_temperature->setValue(settings.temperature);
    m_topK->setValue(static_cast<int>(settings.topK));
    m_seed->setValue(static_cast<int>(settings.seed));
    m_device->setCurrentIndex(std::max(0, m_device->findData(static_cast<int>(settings.device))));
    {
        const QSignalBlocker pressSignals(m_press);
        m_press->setCurrentIndex(std::max(0, m_press->findData(QString::fromStdString(settings.press.name))));
    }
    // Without a press the box shows the ratio a prefill press starts from once one is picked.
    m_ratio->setValue(settings.press.name.empty() ? kDefaultPressRatio : settings.press.ratio);
    rebuildPressOptions(settings.press.options);
    {
        const QSignalBlocker servingSignals(m_serving);
        m_serving->setChecked(settings.serving.has_value());
    }
    if (settings.serving) {
        m_workload->setCurrentText(QString::fromStdString(settings.serving->workload));
        m_blockSize->setValue(static_cast<int>(settings.serving->blockSize));
        m_numBlocks->setValue(settings.serving->numBlocks);
        m_budget->setValue(static_cast<int>(settings.serving->maxNumBatchedTokens));
        m_maxSeqs->setValue(settings.serving->maxNumSeqs);
        m_prefixCaching->setChecked(settings.serving->prefixCaching);
        m_freePolicy->setCurrentIndex(std::max(0, m_freePolicy->findData(QString::fromStdString(settings.serving->freePolicy))));
    }
    updateEnabled();
    describeTokenizer();
}

config::RunSettings NewSessionDialog::settings() const {
    config::RunSettings settings;
    settings.beams = m_shown.beams;
    settings.ignoreEos = m_shown.ignoreEos;
    settings.weightSeed = m_shown.weightSeed;
    settings.threads = m_shown.threads;
    // Speculative decoding has no field: a session opened with it (kvscope --prompt-lookup-num-tokens, a tour)
    // keeps its drafts when started again from here.
    settings.promptLookupNumTokens = m_shown.promptLookupNumTokens;
    settings.assistantModel = m_shown.assistantModel;
    settings.numAssistantTokens = m_shown.numAssistantTokens;
    if (m_usePreset->isChecked()) {
        settings.preset = m_preset->currentText().toStdString();
    } else if (m_useConfig->isChecked()) {
        settings.configPath = m_configPath->text().trimmed().toStdString();
    } else if (m_useCheckpoint->isChecked()) {
        settings.checkpointDir = m_checkpointDir->text().trimmed().toStdString();
    } else {
        settings.modelFile = m_modelFile->text().trimmed().toStdString();
    }
    settings.chat = m_chat->isChecked();
    if (m_usePreset->isChecked() || m_useConfig->isChecked()) {
        settings.tokenizerPath = m_tokenizerPath->text().trimmed().toStdString();
    }
    settings.cache.kind = static_cast<config::CacheKind>(m_cacheKind->currentData().toInt());
    settings.cache.backend = static_cast<config::QuantizerBackend>(m_backend->currentData().toInt());
    settings.cache.nbits = m_nbits->value();
    settings.cache.groupSize = m_group->value();
    settings.cache.residualLength = m_residual->value();
    settings.cache.maxCacheLen = m_maxCacheLen->value();
    settings.cache.typeK = m_typeK->currentData().toString().toStdString();
    settings.cache.typeV = m_typeV->currentData().toString().toStdString();
    settings.cache.attnRotation = m_attnRotation->isChecked();
    settings.prompt = m_prompt->text().toStdString();
    settings.tokens = m_tokens->value();
    settings.temperature = m_temperature->value();
    settings.topK = m_topK->value();
    settings.seed = static_cast<std::uint64_t>(m_seed->value());
    settings.device = static_cast<config::ComputeDevice>(m_device->currentData().toInt());
    settings.press.name = m_press->currentData().toString().toStdString();
    if (!settings.press.name.empty()) {
        // Only a prefill press reads the ratio; the decoding ones compress to their own sizes.
        settings.press.ratio = prefillPress() ? m_ratio->value() : 0.0;
        // Only what was typed: an empty field keeps the press's default.
        settings.press.options = typedPressOptions();
    }
    if (m_serving->isChecked()) {
        config::ServingSettings serving;
        serving.workload = m_workload->currentText().trimmed().toStdString();
        serving.blockSize = m_blockSize->value();
        serving.numBlocks = m_numBlocks->value();
        serving.maxNumBatchedTokens = m_budget->value();
        serving.maxNumSeqs = m_maxSeqs->value();
        serving.prefixCaching = m_prefixCaching->isChecked();
        serving.freePolicy = m_freePolicy->currentData().toString().toStdString();
        settings.serving = serving;
        settings.tokens = 1 << 20; // a serving run goes on until its last request finishes
    }
    return settings;
}

void NewSessionDialog::workloadPicked(const QString& name) {
    paged::Workload workload;
    try {
        workload = paged::Workload::load(paged::WorkloadCatalog::resolve(name.trimmed().toStdString()));
    } catch (const std::exception&) {
        // A path being typed: accepting says what is wrong; the pool stays as it is.
        m_workloadDescription->clear();
        m_suggestedPool->clear();
        return;
    }
    m_workloadDescription->setText(QString::fromStdString(workload.description));
    // Every pool field from the workload's suggestion, the serving defaults where it names none: switching
    // from a workload with a small pool to one without gives the defaults back.
    const config::ServingSettings pool = paged::ServingOptionTable::withPool(
        config::ServingSettings{}, workload.pool, [](std::string_view) { return false; });
    m_blockSize->setValue(static_cast<int>(pool.blockSize));
    m_numBlocks->setValue(pool.numBlocks);
    m_budget->setValue(static_cast<int>(pool.maxNumBatchedTokens));
    m_maxSeqs->setValue(pool.maxNumSeqs);
    m_suggestedPool->setText(workload.pool.empty()
                                 ? tr("This workload suggests no pool: the defaults are filled in below.")
                                 : tr("The pool this workload suggests is filled in below: %1 blocks of %2 "
                                      "tokens, %3 tokens a step, "
                                      "at most %4 running.")
                                       .arg(pool.numBlocks)
                                       .arg(pool.blockSize)
                                       .arg(pool.maxNumBatchedTokens)
                                       .arg(pool.maxNumSeqs));
}

QString NewSessionDialog::suggestedPoolText() const {
    return m_suggestedPool->text();
}

QString NewSessionDialog::workloadDescription() const {
    return m_workloadDescription->text();
}

std::optional<config::ServingSettings> NewSessionDialog::compareServing() const {
    const config::RunSettings settings = this->settings();
    const QString change = m_compareWith->currentData().toString();
    if (!settings.serving || change.isEmpty()) {
        return std::nullopt;
    }
    const config::ServingSettings& base = *settings.serving;
    std::string spec;
    if (change == QLatin1String("prefix-caching")) {
        spec = base.prefixCaching ? "prefix-caching=off" : "prefix-caching=on";
    } else if (change == QLatin1String("half-pool")) {
        spec = "num-blocks=" + std::to_string(std::max(1, base.numBlocks / 2));
    } else if (change == QLatin1String("twice-pool")) {
        spec = "num-blocks=" + std::to_string(base.numBlocks * 2);
    } else {
        spec = "block-size=" + std::to_string(std::max<std::int64_t>(1, base.blockSize / 2));
    }
    const auto changed = paged::ServingOptionTable::changed(base, spec);
    const auto* result = std::get_if<config::ServingSettings>(&changed);
    return result ? std::optional<config::ServingSettings>(*result) : std::nullopt;
}

QString NewSessionDialog::validate() const {
    const config::RunSettings settings = this->settings();
    if (m_usePreset->isChecked() && settings.preset.empty()) {
        return tr("No preset available: the engine found no presets");
    }
    if (m_useConfig->isChecked() && !QFileInfo(QString::fromStdString(settings.configPath)).isFile()) {
        return tr("config.json not found: \"%1\"; choose an existing file").arg(QString::fromStdString(settings.configPath));
    }
    if (m_useCheckpoint->isChecked() && !QFileInfo(QString::fromStdString(settings.checkpointDir)).isDir()) {
        return tr("Checkpoint folder not found: \"%1\"; choose a folder with config.json and *.safetensors")
            .arg(QString::fromStdString(settings.checkpointDir));
    }
    if (!settings.tokenizerPath.empty() && !QFileInfo::exists(QString::fromStdString(settings.tokenizerPath))) {
        return tr("Tokenizer not found: \"%1\"; choose a tokenizer.json, a tokenizer.model or a folder with one")
            .arg(QString::fromStdString(settings.tokenizerPath));
    }
    try {
        config::validate(settings);
    } catch (const config::ConfigError& error) {
        return QString::fromStdString(error.what());
    }
    if (settings.device == config::ComputeDevice::Cuda && !m_capabilities.cudaAvailable) {
        return tr("CUDA is not available here (this LibTorch has no CUDA or no GPU is visible); use the cpu device");
    }
    if (settings.serving) {
        if (settings.serving->workload.empty()) {
            return tr("Serving needs a workload: pick a built-in one or give a workload file");
        }
        try {
            paged::WorkloadCatalog::resolve(settings.serving->workload);
        } catch (const std::exception& error) {
            return QString::fromStdString(error.what());
        }
        if (!settings.press.name.empty() || settings.cache.kind != config::CacheKind::Dynamic) {
            return tr("Serving pages the dynamic cache only: choose the dynamic cache and no press (presses and "
                      "quantized, static or offloaded caches are not paged)");
        }
    }
    return {};
}

void NewSessionDialog::accept() {
    const QString problem = validate();
    if (!problem.isEmpty()) {
        QMessageBox::warning(this, tr("Cannot start this session"), problem);
        return;
    }
    QDialog::accept();
}

QString NewSessionDialog::tokenizerDescription() const { return m_tokenizer->text(); }

void NewSessionDialog::describeTokenizer() {
    if (m_useModelFile->isChecked()) {
        m_tokenizer->setText(tr("the GGUF file's own (its tokenizer.ggml metadata)"));
        return;
    }
    const QString path = (m_useCheckpoint->isChecked() ? m_checkpointDir : m_tokenizerPath)->text().trimmed();
    if (path.isEmpty()) {
        m_tokenizer->setText(m_useCheckpoint->isChecked() ? QString() : tr("bytes (built-in: one token per byte)"));
    } else {
        m_tokenizer->setText(m_capabilities.describeTokenizer
                                 ? QString::fromStdString(m_capabilities.describeTokenizer(path.toStdString()))
                                 : QString());
    }
}

bool NewSessionDialog::prefillPress() const {
    const std::string name = m_press->currentData().toString().toStdString();
    return std::any_of(m_capabilities.presses.begin(), m_capabilities.presses.end(),
                       [&](const config::PressDescription& press) { return press.name == name && press.phase == "prefill"; });
}

std::map<std::string, std::string> NewSessionDialog::typedPressOptions() const {
    std::map<std::string, std::string> typed;
    for (const auto& [key, field] : m_pressOptions) {
        const QString value = field->text().trimmed();
        if (!value.isEmpty()) {
            typed[key] = value.toStdString();
        }
    }
    return typed;
}

void NewSessionDialog::rebuildPressOptions(const std::map<std::string, std::string>& values) {
    for (const auto& [key, field] : m_pressOptions) {
        m_pressLayout->removeRow(field);
    }
    m_pressOptions.clear();
    const auto describe = [this](const std::string& name) -> const config::PressDescription* {
        const auto found = std::find_if(m_capabilities.presses.begin(), m_capabilities.presses.end(),
                                        [&](const config::PressDescription& press) { return press.name == name; });
        return found != m_capabilities.presses.end() ? &*found : nullptr;
    };
    const auto addOptions = [&](const config::PressDescription& owner, const QString& suffix) {
        for (const config::PressOption& option : owner.options) {
            if (m_pressOptions.count(option.name) != 0) {
                continue;
            }
            auto* field = new QLineEdit;
            field->setPlaceholderText(tr("%1 (default)").arg(QString::fromStdString(option.defaultValue)));
            field->setToolTip(QStringLiteral("%1: %2").arg(QString::fromStdString(option.type),
                                                           QString::fromStdString(option.meaning)));
            if (const auto value = values.find(option.name); value != values.end()) {
                field->setText(QString::fromStdString(value->second));
            }
            m_pressLayout->addRow(QString::fromStdString(option.name) + suffix, field);
            m_pressOptions[option.name] = field;
        }
    };
    const config::PressDescription* press = describe(m_press->currentData().toString().toStdString());
    if (press == nullptr) {
        return;
    }
    addOptions(*press, {});
    // A wrapper (adakv, decoding) also takes its base press's options: laid out for the base it names, and
    // again when another base is typed (queued: the field that signals is among those replaced).
    const auto base = std::find_if(press->options.begin(), press->options.end(),
                                   [](const config::PressOption& option) { return option.type == "press"; });
    if (base == press->options.end()) {
        return;
    }
    const auto typedBase = values.find(base->name);
    const std::string baseName = typedBase != values.end() ? typedBase->second : base->defaultValue;
    if (const config::PressDescription* basePress = describe(baseName)) {
        addOptions(*basePress, QStringLiteral(" (%1)").arg(QString::fromStdString(baseName)));
    }
    QLineEdit* baseField = m_pressOptions.at(base->name);
    connect(baseField, &QLineEdit::editingFinished, this, [this, baseField, baseName] {
        const QString typed = baseField->text().trimmed();
        if (!typed.isEmpty() && typed.toStdString() != baseName) {
            QMetaObject::invokeMethod(this, [this] { rebuildPressOptions(typedPressOptions()); }, Qt::QueuedConnection);
        }
    });
}

void NewSessionDialog::updateEnabled() {
    m_preset->setEnabled(m_usePreset->isChecked());
    m_configPath->setEnabled(m_useConfig->isChecked());
    m_checkpointDir->setEnabled(m_useCheckpoint->isChecked());
    m_modelFile->setEnabled(m_useModelFile->isChecked());
    m_tokenizerPath->setEnabled(m_usePreset->isChecked() || m_useConfig->isChecked());
    const auto kind = static_cast<config::CacheKind>(m_cacheKind->currentData().toInt());
    for (QWidget* widget : std::initializer_list<QWidget*>{m_backend, m_nbits, m_group, m_residual}) {
        widget->setEnabled(kind == config::CacheKind::Quantized);
    }
    m_maxCacheLen->setEnabled(kind == config::CacheKind::Static);
    for (QWidget* widget : std::initializer_list<QWidget*>{m_typeK, m_typeV, m_attnRotation}) {
        widget->setEnabled(kind == config::CacheKind::LlamaCpp);
    }
    m_ratio->setEnabled(prefillPress());
    // A serving session's requests bring their own prompts and lengths.
    m_prompt->setEnabled(!m_serving->isChecked());
    m_tokens->setEnabled(!m_serving->isChecked());
}

} // namespace kvscope::gui
