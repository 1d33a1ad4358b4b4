// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"

#include <QDialog>

class QLabel;
class QLineEdit;

namespace kvscope::gui {

/// File > Attach to server: the running server's KV event endpoint (vLLM's --kv-events-config endpoint), its
/// replay endpoint, topic, /metrics address and the served model's tokenizer. OK stays disabled, with the reason
/// under the fields, until the settings would start (config::validate and the endpoint's shape).
class AttachDialog : public QDialog {
    Q_OBJECT
public:
    explicit AttachDialog(const config::RunSettings& initial, QWidget* parent = nullptr);

    /// A live session's settings following the server as the fields say.
    config::RunSettings settings() const;
    /// Why OK is disabled; empty when it is enabled.
    QString problem() const;

    QLineEdit* endpointField() const { return m_endpoint; }
    QLineEdit* replayField() const { return m_replay; }
    QLineEdit* topicField() const { return m_topic; }
    QLineEdit* metricsField() const { return m_metrics; }
    QLineEdit* tokenizerField() const { return m_tokenizer; }

private:
    void check();

    QLineEdit* m_endpoint;
    QLineEdit* m_replay;
    QLineEdit* m_topic;
    QLineEdit* m_metrics;
    QLineEdit* m_tokenizer;
    QLabel* m_problem;
    QWidget* m_ok = nullptr;
};

} // namespace kvscope::gui
