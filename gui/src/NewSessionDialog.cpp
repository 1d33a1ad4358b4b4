#include "kvscope/gui/NewSessionDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace kvscope::gui {
namespace {

QWidget* withBrowse(QLineEdit* edit, QPushButton* browse) {
    auto* row = new QWidget;
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    layout->addWidget(browse);
    return row;
}

QSpinBox* spin(int minimum, int maximum, int value) {
    auto* box = new QSpinBox;
    box->setRange(minimum, maximum);
    box->setValue(value);
    return box;
}

} // namespace

NewSessionDialog::NewSessionDialog(const EngineCapabilities& capabilities, const SessionSettings& initial,
                                   QWidget* parent)
    : QDialog(parent), m_capabilities(capabilities), m_usePreset(new QRadioButton(tr("Preset"))),
      m_useConfig(new QRadioButton(tr("config.json"))), m_useCheckpoint(new QRadioButton(tr("Checkpoint folder"))),
      m_preset(new QComboBox), m_configPath(new QLineEdit), m_checkpointDir(new QLineEdit), m_cacheKind(new QComboBox),
      m_backend(new QComboBox), m_nbits(spin(1, 8, 4)), m_group(spin(0, 4096, 0)), m_residual(spin(1, 1 << 20, 128)),
      m_maxCacheLen(spin(0, 1 << 20, 0)), m_prompt(new QLineEdit), m_tokens(spin(1, 1 << 20, 32)),
      m_seed(spin(0, 1 << 30, 0)), m_device(new QComboBox) {
    setWindowTitle(tr("New live session"));
    for (const std::string& name : capabilities.presets) {
        m_preset->addItem(QString::fromStdString(name));
    }
    m_configPath->setPlaceholderText(tr("a Hugging Face config.json (built-in weights)"));
    m_checkpointDir->setPlaceholderText(tr("a folder with config.json and *.safetensors"));
    auto* browseConfig = new QPushButton(tr("Browse…"));
    auto* browseCheckpoint = new QPushButton(tr("Browse…"));
    connect(browseConfig, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Model config"), {}, tr("config.json (*.json)"));
        if (!path.isEmpty()) {
            m_configPath->setText(path);
            m_useConfig->setChecked(true);
        }
    });
    connect(browseCheckpoint, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"));
        if (!path.isEmpty()) {
            m_checkpointDir->setText(path);
            m_useCheckpoint->setChecked(true);
        }
    });

    auto* model = new QGroupBox(tr("Model"));
    auto* modelLayout = new QFormLayout(model);
    modelLayout->addRow(m_usePreset, m_preset);
    modelLayout->addRow(m_useConfig, withBrowse(m_configPath, browseConfig));
    modelLayout->addRow(m_useCheckpoint, withBrowse(m_checkpointDir, browseCheckpoint));

    for (const char* kind : {"dynamic", "static", "quantized", "offloaded"}) {
        m_cacheKind->addItem(QString::fromLatin1(kind));
    }
    m_backend->addItem(QStringLiteral("min-max"));
    m_backend->addItem(QStringLiteral("hqq"));
    m_group->setSpecialValueText(tr("head dim"));
    m_maxCacheLen->setSpecialValueText(tr("prompt + tokens"));
    auto* cache = new QGroupBox(tr("Cache"));
    auto* cacheLayout = new QFormLayout(cache);
    cacheLayout->addRow(tr("Kind"), m_cacheKind);
    cacheLayout->addRow(tr("Quantizer"), m_backend);
    cacheLayout->addRow(tr("Bits"), m_nbits);
    cacheLayout->addRow(tr("Group size"), m_group);
    cacheLayout->addRow(tr("Residual length"), m_residual);
    cacheLayout->addRow(tr("Static length"), m_maxCacheLen);

    m_device->addItem(QStringLiteral("cpu"));
    m_device->addItem(capabilities.cudaAvailable ? QStringLiteral("cuda") : QStringLiteral("cuda (not available)"),
                      QStringLiteral("cuda"));
    m_device->setItemData(0, QStringLiteral("cpu"));
    auto* run = new QGroupBox(tr("Run"));
    auto* runLayout = new QFormLayout(run);
    runLayout->addRow(tr("Prompt"), m_prompt);
    runLayout->addRow(tr("New tokens"), m_tokens);
    runLayout->addRow(tr("Seed"), m_seed);
    runLayout->addRow(tr("Device"), m_device);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Start"));
    connect(buttons, &QDialogButtonBox::accepted, this, &NewSessionDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &NewSessionDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(model);
    layout->addWidget(cache);
    layout->addWidget(run);
    layout->addWidget(buttons);

    for (QRadioButton* radio : {m_usePreset, m_useConfig, m_useCheckpoint}) {
        connect(radio, &QRadioButton::toggled, this, &NewSessionDialog::updateEnabled);
    }
    connect(m_cacheKind, &QComboBox::currentTextChanged, this, &NewSessionDialog::updateEnabled);
    setSettings(initial);
}

void NewSessionDialog::setSettings(const SessionSettings& settings) {
    if (!settings.checkpointDir.empty()) {
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
    m_cacheKind->setCurrentIndex(std::max(0, m_cacheKind->findText(QString::fromStdString(settings.cacheKind))));
    m_backend->setCurrentIndex(settings.backend == "hqq" ? 1 : 0);
    m_nbits->setValue(settings.nbits);
    m_group->setValue(static_cast<int>(settings.groupSize));
    m_residual->setValue(static_cast<int>(settings.residualLength));
    m_maxCacheLen->setValue(static_cast<int>(settings.maxCacheLen));
    m_prompt->setText(QString::fromStdString(settings.prompt));
    m_tokens->setValue(static_cast<int>(settings.tokens));
    m_seed->setValue(static_cast<int>(settings.seed));
    m_device->setCurrentIndex(settings.device == "cuda" ? 1 : 0);
    updateEnabled();
}

SessionSettings NewSessionDialog::settings() const {
    SessionSettings settings;
    if (m_usePreset->isChecked()) {
        settings.preset = m_preset->currentText().toStdString();
    } else if (m_useConfig->isChecked()) {
        settings.configPath = m_configPath->text().trimmed().toStdString();
    } else {
        settings.checkpointDir = m_checkpointDir->text().trimmed().toStdString();
    }
    settings.cacheKind = m_cacheKind->currentText().toStdString();
    settings.backend = m_backend->currentText().toStdString();
    settings.nbits = m_nbits->value();
    settings.groupSize = m_group->value();
    settings.residualLength = m_residual->value();
    settings.maxCacheLen = m_maxCacheLen->value();
    settings.prompt = m_prompt->text().toStdString();
    settings.tokens = m_tokens->value();
    settings.seed = static_cast<std::uint64_t>(m_seed->value());
    settings.device = m_device->currentData().toString().toStdString();
    return settings;
}

QString NewSessionDialog::validate() const {
    const SessionSettings settings = this->settings();
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
    if (settings.cacheKind == "quantized") {
        const bool hqq = settings.backend == "hqq";
        const QList<int> allowed = hqq ? QList<int>{1, 2, 3, 4, 8} : QList<int>{2, 4, 8};
        if (!allowed.contains(settings.nbits)) {
            return tr("%1 bits is not supported by the %2 quantizer (allowed: %3)")
                .arg(settings.nbits)
                .arg(QString::fromStdString(settings.backend))
                .arg(hqq ? QStringLiteral("1, 2, 3, 4, 8") : QStringLiteral("2, 4, 8"));
        }
    }
    if (settings.device == "cuda" && !m_capabilities.cudaAvailable) {
        return tr("CUDA is not available here (this LibTorch has no CUDA or no GPU is visible); use the cpu device");
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

void NewSessionDialog::updateEnabled() {
    m_preset->setEnabled(m_usePreset->isChecked());
    m_configPath->setEnabled(m_useConfig->isChecked());
    m_checkpointDir->setEnabled(m_useCheckpoint->isChecked());
    const bool quantized = m_cacheKind->currentText() == QStringLiteral("quantized");
    for (QWidget* widget : std::initializer_list<QWidget*>{m_backend, m_nbits, m_group, m_residual}) {
        widget->setEnabled(quantized);
    }
    m_maxCacheLen->setEnabled(m_cacheKind->currentText() == QStringLiteral("static"));
}

} // namespace kvscope::gui
