// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/BlockTableView.h"

#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

constexpr int kTableMargin = 6;
constexpr int kHeadline = 20;
constexpr int kGroupLabel = 56;
constexpr int kRow = 44;
/// Narrower token cells get no text of their own: their block's text spans them.
constexpr double kTokenTextWidth = 18.0;
/// A block narrower than this shows no text (the tooltip still names it).
constexpr double kBlockTextWidth = 20.0;

const trace::PagedRequestState* findRequest(const trace::PagedState& paged, const QString& id) {
    for (const trace::PagedRequestState& request : paged.requests) {
        if (QString::fromStdString(request.id) == id) {
            return &request;
        }
    }
    return nullptr;
}

int indexOf(const trace::PagedState& paged, const trace::PagedRequestState* request) {
    return request == nullptr ? -1 : static_cast<int>(request - paged.requests.data());
}

} // namespace

BlockTableView::BlockTableView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection) {
    setMouseTracking(true);
    connect(&session, &SessionController::stepChanged, this, qOverload<>(&QWidget::update));
    connect(&session, &SessionController::sessionLoaded, this, qOverload<>(&QWidget::update));
    connect(&selection, &ViewSelection::requestSelected, this, qOverload<>(&QWidget::update));
}

QString BlockTableView::shownRequest() const {
    const trace::PagedState& paged = m_session.state()->paged;
    if (!m_selection.selectedRequest().isEmpty() &&
        findRequest(paged, m_selection.selectedRequest()) != nullptr) {
        return m_selection.selectedRequest();
    }
    for (const trace::PagedRequestState& request : paged.requests) {
        if (request.phase == trace::PagedRequestPhase::Running) {
            return QString::fromStdString(request.id);
        }
    }
    return {};
}

QString BlockTableView::headline() const {
    const trace::PagedState& paged = m_session.state()->paged;
    if (!paged.active) {
        return tr("Not a serving session");
    }
    const trace::PagedRequestState* request = findRequest(paged, shownRequest());
    if (request == nullptr) {
        return tr("No request running at this step: click a request's lane or a pool block to show its block "
                  "table");
    }
    QString state;
    switch (request->phase) {
    case trace::PagedRequestPhase::Waiting:
        state = tr("waiting: it holds no blocks yet");
        break;
    case trace::PagedRequestPhase::Preempted:
        state = tr("preempted: its blocks were freed, it waits to be recomputed");
        break;
    case trace::PagedRequestPhase::Finished:
        state = tr("finished: the table it held when it finished");
        break;
    case trace::PagedRequestPhase::Running:
        state = tr("running");
        break;
    }
    QStringList blocks;
    if (!request->blockTables.empty()) {
        for (const std::int32_t block : request->blockTables.front()) {
            blocks << (block < 0 || block == paged.nullBlock ? QStringLiteral("–") : QString::number(block));
        }
    }
    return tr("%1 (%2): %3 tokens computed, %4 from the prefix cache; block table [%5]")
        .arg(QString::fromStdString(request->id), state)
        .arg(request->numComputedTokens)
        .arg(std::max<std::int64_t>(0, request->cachedTokens))
        .arg(blocks.join(QStringLiteral(", ")));
}

std::int64_t BlockTableView::positionExtent() const {
    const trace::PagedState& paged = m_session.state()->paged;
    const trace::PagedRequestState* request = findRequest(paged, shownRequest());
    if (request == nullptr) {
        return 0;
    }
    std::int64_t extent = request->numComputedTokens;
    for (const auto& table : request->blockTables) {
        extent = std::max(extent, static_cast<std::int64_t>(table.size()) * paged.blockSize);
    }
    return extent;
}

double BlockTableView::positionWidth(std::int64_t positions) const {
    const double available = std::max(1, width() - 2 * kTableMargin - kGroupLabel);
    return positions <= 0 ? available : std::min(64.0, available / static_cast<double>(positions));
}

std::int64_t BlockTableView::positionAt(int x) const {
    const std::int64_t extent = positionExtent();
    const double each = positionWidth(extent);
    const double left = kTableMargin + kGroupLabel;
    if (extent <= 0 || x < left) {
        return -1;
    }
    const auto position = static_cast<std::int64_t>(std::floor((x - left) / each));
    return position < extent ? position : -1;
}

QString BlockTableView::fullBlockText(std::size_t slot) const {
    const QString request = shownRequest();
    const trace::PagedState& paged = m_session.state()->paged;
    if (request.isEmpty() || paged.blockSize <= 0) {
        return {};
    }
    QString text;
    for (std::int64_t i = 0; i < paged.blockSize; ++i) {
        const std::int64_t position = static_cast<std::int64_t>(slot) * paged.blockSize + i;
        if (const std::optional<std::string> piece =
                m_session.paged().piece(request.toStdString(), position)) {
            text += QString::fromStdString(*piece);
        }
    }
    // Read as running text: spaces stay spaces (a token's own cell shows them as dots), line breaks show.
    text.replace(QLatin1Char('\n'), QChar(0x21B5));
    text.replace(QLatin1Char('\t'), QChar(0x2192));
    return text;
}

QString BlockTableView::blockText(std::size_t group, std::size_t slot) const {
    const trace::PagedState& paged = m_session.state()->paged;
    const trace::PagedRequestState* request = findRequest(paged, shownRequest());
    if (!paged.active || request == nullptr || group >= request->blockTables.size() ||
        slot >= request->blockTables[group].size()) {
        return {};
    }
    const std::int32_t block = request->blockTables[group][slot];
    const double each = positionWidth(positionExtent());
    const double blockWidth = static_cast<double>(paged.blockSize) * each - 2;
    if (block < 0 || block == paged.nullBlock || each >= kTokenTextWidth || blockWidth < kBlockTextWidth) {
        return {};
    }
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
    return QFontMetrics(small).elidedText(fullBlockText(slot), Qt::ElideRight,
                                          static_cast<int>(blockWidth) - 4);
}

void BlockTableView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawText(QRect(kTableMargin, 0, width() - 2 * kTableMargin, kHeadline), Qt::AlignVCenter | Qt::AlignLeft,
                     headline());
    const trace::PagedState& paged = m_session.state()->paged;
    const trace::PagedRequestState* request = findRequest(paged, shownRequest());
    if (!paged.active || request == nullptr) {
        return;
    }
    const PagedHistory& history = m_session.paged();
    const QColor colour = PlotStyle::requestColour(
        history.requestIndex(request->id) >= 0 ? history.requestIndex(request->id) : indexOf(paged, request));
    const QColor pale = QColor::fromRgbF(colour.redF() * 0.35 + 0.65, colour.greenF() * 0.35 + 0.65,
                                         colour.blueF() * 0.35 + 0.65);
    const std::int64_t extent = positionExtent();
    const double each = positionWidth(extent);
    const double left = kTableMargin + kGroupLabel;
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
    for (std::size_t group = 0; group < request->blockTables.size(); ++group) {
        const int top = kHeadline + 4 + static_cast<int>(group) * kRow;
        painter.setFont(small);
        painter.setPen(palette().color(QPalette::WindowText));
        const std::int64_t window = group < paged.groupWindows.size() ? paged.groupWindows[group] : 0;
        painter.drawText(QRect(kTableMargin, top, kGroupLabel - 4, kRow - 8), Qt::AlignVCenter | Qt::AlignLeft,
                         request->blockTables.size() > 1
                             ? (window == 0 ? tr("group %1\nfull").arg(group)
                                            : tr("group %1\nwindow %2").arg(group).arg(window))
                             : tr("table"));
        const std::vector<std::int32_t>& table = request->blockTables[group];
        for (std::size_t slot = 0; slot < table.size(); ++slot) {
            const std::int32_t block = table[slot];
            const double x0 = left + static_cast<double>(slot) * static_cast<double>(paged.blockSize) * each;
            const QRectF box(x0, top + 12, static_cast<double>(paged.blockSize) * each - 2, kRow - 16);
            const bool hole = block < 0 || block == paged.nullBlock;
            if (hole) {
                painter.fillRect(box, QBrush(QColor(160, 160, 160), Qt::BDiagPattern));
                continue;
            }
            for (std::int64_t i = 0; i < paged.blockSize; ++i) {
                const std::int64_t position = static_cast<std::int64_t>(slot) * paged.blockSize + i;
                const QRectF cell(x0 + static_cast<double>(i) * each, box.top(), each - 1, box.height());
                painter.fillRect(cell, position < request->numComputedTokens ? colour : pale);
                if (each >= kTokenTextWidth) {
                    if (const std::optional<std::string> piece = history.piece(request->id, position)) {
                        painter.setPen(position < request->numComputedTokens && colour.lightnessF() < 0.6
                                           ? Qt::white
                                           : Qt::black);
                        painter.drawText(cell.adjusted(1, 0, -1, 0), Qt::AlignCenter,
                                         QString::fromStdString(SessionTokens::visible(*piece)));
                    }
                }
            }
            if (const QString text = blockText(group, slot); !text.isEmpty()) {
                // Narrow cells: the block's tokens as one text, on the colour most of the block has.
                const std::int64_t computed = std::clamp<std::int64_t>(
                    request->numComputedTokens - static_cast<std::int64_t>(slot) * paged.blockSize, 0,
                    paged.blockSize);
                painter.setPen(2 * computed > paged.blockSize && colour.lightnessF() < 0.6 ? Qt::white
                                                                                           : Qt::black);
                painter.drawText(box.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
            }
            const bool shared = static_cast<std::size_t>(block) < paged.blocks.size() &&
                                paged.blocks[static_cast<std::size_t>(block)].refCnt > 1;
            painter.setPen(shared ? QPen(QColor(25, 25, 30), 3) : QPen(QColor(120, 125, 135), 1));
            painter.drawRect(box);
            const bool hit = (static_cast<std::int64_t>(slot) + 1) * paged.blockSize <=
                             std::max<std::int64_t>(0, request->cachedTokens);
            if (hit) {
                painter.fillRect(QRectF(box.left(), box.bottom() + 1, box.width(), 3), QColor(0, 110, 255));
            }
            painter.setPen(palette().color(QPalette::WindowText));
            painter.drawText(
                QRectF(x0, top, box.width(), 12), Qt::AlignLeft | Qt::AlignVCenter,
                shared
                    ? tr("block %1 ×%2").arg(block).arg(paged.blocks[static_cast<std::size_t>(block)].refCnt)
                    : tr("block %1").arg(block));
        }
    }
}

void BlockTableView::mouseMoveEvent(QMouseEvent* event) {
    const std::int64_t position = positionAt(event->position().toPoint().x());
    const QString request = shownRequest();
    if (position < 0 || request.isEmpty()) {
        QToolTip::hideText();
        return;
    }
    const trace::PagedState& paged = m_session.state()->paged;
    const std::optional<std::string> piece = m_session.paged().piece(request.toStdString(), position);
    QString text = tr("%1, token %2").arg(request).arg(position);
    if (piece) {
        text += QStringLiteral(": '%1'").arg(QString::fromStdString(*piece));
    }
    if (paged.blockSize > 0) {
        const auto slot = static_cast<std::size_t>(position / paged.blockSize);
        text += tr(" (slot %1 of its table)").arg(slot);
        if (const QString block = fullBlockText(slot); !block.isEmpty()) {
            text += tr("\nits block holds '%1'").arg(block);
        }
    }
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

} // namespace kvscope::gui
