// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/AttachDialog.h"

#include "kvscope/config/ConfigError.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace kvscope::gui {

namespace {

bool zmqEndpoint(const QString& text) {
    return text.startsWith(QLatin1String("tcp://")) || text.startsWith(QLatin1String("ipc://"));
}

} // namespace

AttachDialog::AttachDialog(const config::RunSettings& initial, QWidget* parent)
    : QDialog(parent), m_endpoint(new QLineEdit), m_replay(new QLineEdit), m_topic(new QLineEdit),
      m_metrics(new QLineEdit), m_tokenizer(new QLineEdit), m_problem(new QLabel) {
    setWindowTitle(tr("Attach to server"));
    const config::AttachSettings attach = initial.attach.value_or(config::AttachSettings{});
    m_endpoint->setText(QString::fromStdString(attach.endpoint));
    m_endpoint->setPlaceholderText(QStringLiteral("tcp://127.0.0.1:5557"));
    m_endpoint->setToolTip(tr("The server's KV event endpoint: vLLM's --kv-events-config endpoint (publisher zmq), "
                              "SGLang's --kv-events-config endpoint"));
    m_replay->setText(QString::fromStdString(attach.replayEndpoint));
    m_replay->setPlaceholderText(QStringLiteral("tcp://127.0.0.1:5558"));
    m_replay->setToolTip(tr("vLLM's replay_endpoint: kvscope catches up from the server's first message and fills "
                            "gaps; empty: only what arrives from now on"));
    m_topic->setText(QString::fromStdString(attach.topic));
    m_topic->setPlaceholderText(tr("every topic"));
    m_metrics->setText(QString::fromStdString(attach.metricsUrl));
    m_metrics->setPlaceholderText(QStringLiteral("http://127.0.0.1:8000/metrics"));
    m_metrics->setToolTip(tr("The server's metrics page: the prefix-cache hit rate, read once a second"));
    m_tokenizer->setText(QString::fromStdString(initial.tokenizerPath));
    m_tokenizer->setPlaceholderText(tr("the served model's folder or tokenizer.json (for the blocks' text)"));
    auto* form = new QFormLayout;
    form->addRow(tr("KV events endpoint"), m_endpoint);
    form->addRow(tr("Replay endpoint"), m_replay);
    form->addRow(tr("Topic"), m_topic);
    form->addRow(tr("Metrics address"), m_metrics);
    form->addRow(tr("Tokenizer"), m_tokenizer);
    m_problem->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Attach"));
    m_ok = buttons->button(QDialogButtonBox::Ok);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_problem);
    layout->addWidget(buttons);
    for (QLineEdit* field : {m_endpoint, m_replay, m_topic, m_metrics, m_tokenizer}) {
        connect(field, &QLineEdit::textChanged, this, &AttachDialog::check);
    }
    check();
}

config::RunSettings AttachDialog::settings() const {
    config::RunSettings settings = config::liveSessionSettings();
    settings.tokens = 1 << 30; // followed until stopped
    settings.tokenizerPath = m_tokenizer->text().trimmed().toStdString();
    settings.attach = config::AttachSettings{m_endpoint->text().trimmed().toStdString(),
                                             m_replay->text().trimmed().toStdString(),
                                             m_topic->text().toStdString(),
                                             m_metrics->text().trimmed().toStdString()};
    return settings;
}

QString AttachDialog::problem() const { return m_problem->text(); }

void AttachDialog::check() {
    QString problem;
    const QString endpoint = m_endpoint->text().trimmed();
    const QString replay = m_replay->text().trimmed();
    const QString metrics = m_metrics->text().trimmed();
    if (endpoint.isEmpty()) {
        problem = tr("Give the server's KV events endpoint (tcp://HOST:PORT or ipc://PATH).");
    } else if (!zmqEndpoint(endpoint)) {
        problem = tr("The KV events endpoint must start with tcp:// or ipc://, e.g. tcp://127.0.0.1:5557.");
    } else if (!replay.isEmpty() && !zmqEndpoint(replay)) {
        problem = tr("The replay endpoint must start with tcp:// or ipc://, e.g. tcp://127.0.0.1:5558 (or stay "
                     "empty).");
    } else if (!metrics.isEmpty() && !metrics.startsWith(QLatin1String("http://"))) {
        problem = tr("The metrics address must be plain HTTP, e.g. http://127.0.0.1:8000/metrics (or stay empty).");
    } else {
        try {
            config::validate(settings());
        } catch (const config::ConfigError& error) {
            problem = QString::fromStdString(error.what());
        }
    }
    m_problem->setText(problem);
    m_problem->setVisible(!problem.isEmpty());
    m_ok->setEnabled(problem.isEmpty());
}

} // namespace kvscope::gui
