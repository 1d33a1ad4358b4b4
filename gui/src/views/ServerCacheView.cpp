// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/ServerCacheView.h"

#include "kvscope/gui/models/ServerPrefixTreeModel.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/ServerCacheChart.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include <map>

namespace kvscope::gui {

ServerCacheView::ServerCacheView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_status(new QLabel(this)), m_tree(new QTreeView(this)),
      m_model(new ServerPrefixTreeModel(this)) {
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_tree->setModel(m_model);
    m_tree->setAlternatingRowColors(true);
    m_tree->setUniformRowHeights(true);
    // A block's text is its whole tokens: where it does not fit, its end (what tells siblings apart) stays.
    m_tree->setTextElideMode(Qt::ElideMiddle);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_tree->header()->setSectionResizeMode(ServerPrefixTreeModel::Tokens, QHeaderView::Stretch);
    auto* charts = new QSplitter(Qt::Vertical);
    for (const auto metric : {ServerCacheChart::Metric::BlocksHeld, ServerCacheChart::Metric::StoredRemoved,
                              ServerCacheChart::Metric::HitRate}) {
        charts->addWidget(new ServerCacheChart(session, selection, metric));
    }
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(m_tree);
    split->addWidget(charts);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setSizes({900, 600});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    connect(&session, &SessionController::stepChanged, this, &ServerCacheView::reload);
    connect(&session, &SessionController::sessionLoaded, this, &ServerCacheView::reload);
    reload();
}

QString ServerCacheView::statusText() const { return m_status->text(); }

QString ServerCacheView::describe(const trace::ServerCacheState& state, const QString& server) {
    std::map<std::string, std::int64_t> perMedium;
    for (const auto& [key, block] : state.blocks) {
        ++perMedium[key.first];
    }
    QStringList media;
    for (const auto& [medium, count] : perMedium) {
        media << tr("%1 %2").arg(count).arg(QString::fromStdString(medium));
    }
    QString text = tr("%1: %2 messages").arg(server).arg(state.messages);
    if (state.lostMessages > 0) {
        text += tr(", %1 lost (the replay socket no longer held them)").arg(state.lostMessages);
    }
    if (state.refusedMessages > 0) {
        text += tr(", %1 refused (not KV events)").arg(state.refusedMessages);
    }
    text += tr(". Cached blocks: %1 (%2 stored, %3 removed so far)")
                .arg(media.isEmpty() ? tr("none") : media.join(QStringLiteral(", ")))
                .arg(state.storedBlocks)
                .arg(state.removedBlocks);
    if (state.prefixCacheQueries > 0) {
        text += tr(". Hit rate %1% (%2 of %3 prompt tokens found cached)")
                    .arg(100.0 * static_cast<double>(state.prefixCacheHits) /
                             static_cast<double>(state.prefixCacheQueries),
                         0, 'f', 1)
                    .arg(state.prefixCacheHits)
                    .arg(state.prefixCacheQueries);
    }
    return text + QLatin1Char('.');
}

void ServerCacheView::reload() {
    const trace::StepState& state = *m_session.state();
    m_model->setState(state.server, state.step);
    m_tree->expandAll();
    m_status->setText(describe(state.server, QString::fromStdString(m_session.metadata().model)));
}

} // namespace kvscope::gui
