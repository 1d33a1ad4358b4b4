// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/BlockPoolView.h"

#include "kvscope/gui/models/PagedExplainer.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>

namespace kvscope::gui {
namespace {

constexpr int kTopBar = 28;
constexpr int kPoolMargin = 6;
constexpr int kSwatch = 12;

const QColor kCachedFree(186, 189, 194);
const QColor kFree(255, 255, 255);
const QColor kNull(70, 70, 76);
const QColor kOtherGroupHeld(205, 212, 224);
const QColor kAllocated(46, 160, 67);
const QColor kTouched(0, 110, 255);
const QColor kEvicted(220, 40, 40);

QString groupName(const trace::PagedState& state, int group) {
    if (group < 0 || static_cast<std::size_t>(group) >= state.groupWindows.size()) {
        return QObject::tr("every group");
    }
    const std::int64_t window = state.groupWindows[static_cast<std::size_t>(group)];
    return window == 0 ? QObject::tr("group %1: full attention").arg(group)
                       : QObject::tr("group %1: sliding window of %2 tokens").arg(group).arg(window);
}

QString phaseName(trace::PagedRequestPhase phase) {
    switch (phase) {
    case trace::PagedRequestPhase::Waiting:
        return QObject::tr("waiting");
    case trace::PagedRequestPhase::Running:
        return QObject::tr("running");
    case trace::PagedRequestPhase::Preempted:
        return QObject::tr("preempted");
    case trace::PagedRequestPhase::Finished:
        return QObject::tr("finished");
    }
    return {};
}

/// Black or white, whichever reads better on `fill`.
QColor textOn(const QColor& fill) {
    return fill.lightnessF() > 0.6 ? QColor(30, 30, 30) : QColor(255, 255, 255);
}

} // namespace

BlockPoolView::BlockPoolView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection), m_groups(new QComboBox(this)),
      m_headline(new QLabel(this)) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(m_headline, 1);
    bar->addWidget(m_groups);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(kPoolMargin, 2, kPoolMargin, 0);
    layout->addLayout(bar);
    layout->addStretch(1);
    m_groups->setToolTip(tr("Layer group whose block tables colour the pool"));
    connect(m_groups, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0) {
            setGroup(m_groups->itemData(index).toInt());
        }
    });
    connect(&session, &SessionController::stepChanged, this, &BlockPoolView::reload);
    connect(&session, &SessionController::sessionLoaded, this, &BlockPoolView::reload);
    connect(&session, &SessionController::sessionGrew, this, &BlockPoolView::reload);
    connect(&selection, &ViewSelection::requestSelected, this, qOverload<>(&QWidget::update));
    reload();
}

void BlockPoolView::setGroup(int group) {
    if (group == m_group) {
        return;
    }
    m_group = group;
    const int index = m_groups->findData(group);
    if (index >= 0 && index != m_groups->currentIndex()) {
        m_groups->setCurrentIndex(index);
    }
    reload();
}

void BlockPoolView::reload() {
    const trace::StepState& state = *m_session.state();
    const trace::PagedState& paged = state.paged;
    // The group picker lists the pool's groups; it only shows when there is a choice.
    const int groups = static_cast<int>(paged.groupWindows.size());
    if (m_groups->count() != (groups > 1 ? groups + 1 : 0)) {
        const QSignalBlocker blocker(m_groups);
        m_groups->clear();
        if (groups > 1) {
            m_groups->addItem(tr("All groups"), -1);
            for (int group = 0; group < groups; ++group) {
                m_groups->addItem(groupName(paged, group), group);
            }
        }
        if (m_group >= groups) {
            m_group = -1;
        }
        m_groups->setCurrentIndex(std::max(0, m_groups->findData(m_group)));
    }
    m_groups->setVisible(groups > 1);
    const PagedHistory::StepChanges& changes = m_session.paged().changes(state.step);
    m_cells = PoolGeometry::cellsOf(paged, m_group, changes.allocated, changes.touched, changes.evicted);
    m_headline->setText(headline());
    relayout();
    update();
}

QString BlockPoolView::headline() const {
    const trace::PagedState& paged = m_session.state()->paged;
    if (!paged.active) {
        return tr(
            "No block pool: this session is not a serving session (kvscope-cli serve, or File > New session "
            "> Serving).");
    }
    int used = 0;
    int cached = 0;
    for (const BlockCell& cell : m_cells) {
        used += cell.kind == BlockCellKind::Held ? 1 : 0;
        cached += cell.kind == BlockCellKind::CachedFree ? 1 : 0;
    }
    const PagedHistory::StepMetrics& metrics = m_session.paged().metrics(m_session.state()->step);
    const int usable = paged.numBlocks - (paged.nullBlock >= 0 ? 1 : 0);
    QString line =
        tr("Step %1: %2 of %3 blocks held, %4 free and still cached, %5 empty · blocks of %6 tokens")
            .arg(m_session.state()->step)
            .arg(used)
            .arg(usable)
            .arg(cached)
            .arg(usable - used - cached)
            .arg(paged.blockSize);
    if (paged.queryTokens > 0) {
        line +=
            tr(" · prefix hits %1% so far")
                .arg(100.0 * static_cast<double>(paged.hitTokens) / static_cast<double>(paged.queryTokens), 0,
                     'f', 0);
    }
    if (metrics.evictions > 0) {
        line += tr(" · %1 evicted this step").arg(metrics.evictions);
    }
    if (metrics.preemptions > 0) {
        line += tr(" · %1 preempted this step").arg(metrics.preemptions);
    }
    return line;
}

QStringList BlockPoolView::legendEntries() const {
    QStringList entries;
    const trace::PagedState& paged = m_session.state()->paged;
    for (const trace::PagedRequestState& request : paged.requests) {
        entries << QStringLiteral("%1 (%2)").arg(QString::fromStdString(request.id),
                                                 phaseName(request.phase));
    }
    if (!paged.active) {
        return entries;
    }
    entries << tr("empty (free)") << tr("free, still cached (#: evicted in this order)")
            << tr("shared (×: reference count)") << tr("allocated this step")
            << tr("reused this step (prefix hit)") << tr("evicted this step");
    return entries;
}

int BlockPoolView::legendHeight() const {
    if (!m_session.state()->paged.active) {
        return 0;
    }
    const QFontMetrics metrics(font());
    const int available = std::max(1, width() - 2 * kPoolMargin);
    int lines = 1;
    int x = 0;
    for (const QString& entry : legendEntries()) {
        const int entryWidth = kSwatch + 4 + metrics.horizontalAdvance(entry) + 14;
        if (x > 0 && x + entryWidth > available) {
            ++lines;
            x = 0;
        }
        x += entryWidth;
    }
    return lines * (metrics.height() + 4) + 4;
}

QRect BlockPoolView::gridRect() const {
    return QRect(kPoolMargin, kTopBar + 2, std::max(1, width() - 2 * kPoolMargin),
                 std::max(1, height() - kTopBar - 4 - legendHeight()));
}

void BlockPoolView::relayout() {
    const QRect grid = gridRect();
    m_layout = PoolGeometry::layout(static_cast<int>(m_cells.size()), grid.width(), grid.height(), 16, 72);
    m_layout.left = grid.left();
    m_layout.top = grid.top();
}

void BlockPoolView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    relayout();
}

int BlockPoolView::blockAt(QPoint point) const {
    return PoolGeometry::blockAt(m_layout, point.x(), point.y(), static_cast<int>(m_cells.size()));
}

QRect BlockPoolView::cellRect(int block) const {
    if (block < 0 || static_cast<std::size_t>(block) >= m_cells.size()) {
        return {};
    }
    const CellRect r = PoolGeometry::cellRect(m_layout, block);
    return QRectF(r.x, r.y, r.size, r.size).toRect();
}

QString BlockPoolView::describeBlock(int block) const {
    if (block < 0 || static_cast<std::size_t>(block) >= m_cells.size()) {
        return {};
    }
    const BlockCell& cell = m_cells[static_cast<std::size_t>(block)];
    const trace::PagedState& paged = m_session.state()->paged;
    const PagedHistory& history = m_session.paged();
    const trace::PagedBlockState& state = paged.blocks[static_cast<std::size_t>(block)];
    QStringList lines;
    lines << (paged.groupWindows.size() > 1 && cell.group >= 0
                  ? tr("Block %1 (%2)").arg(block).arg(groupName(paged, cell.group))
                  : tr("Block %1").arg(block));
    const auto tokensOf = [&](const std::string& request, std::int64_t begin, std::int64_t end) {
        QString line =
            end - begin == 1 ? tr("token %1").arg(begin) : tr("tokens %1 to %2").arg(begin).arg(end - 1);
        if (const std::optional<std::string> text = history.text(request, begin, end)) {
            line += QStringLiteral(" '%1'").arg(PagedExplainer::preview(*text, 48));
        }
        return line;
    };
    switch (cell.kind) {
    case BlockCellKind::Null:
        lines << tr(
            "the null block: reserved, never allocated; sliding-window tables point their holes at it");
        break;
    case BlockCellKind::Free:
        lines << tr("free, holds no hash: %1 in the free queue")
                     .arg(cell.freeRank == 0 ? tr("first") : tr("#%1").arg(cell.freeRank));
        break;
    case BlockCellKind::CachedFree: {
        lines << tr("free but still cached: #%1 in the free queue, so %2")
                     .arg(cell.freeRank)
                     .arg(cell.freeRank == 0
                              ? tr("the next allocation evicts it")
                              : tr("%1 allocations come before it is evicted").arg(cell.freeRank));
        if (const PagedHistory::CacheRecord* record =
                history.cachedBy(block, std::numeric_limits<std::uint64_t>::max())) {
            lines << tr("cached by %1: %2")
                         .arg(QString::fromStdString(record->requestId),
                              tokensOf(record->requestId, record->tokenBegin, record->tokenEnd));
        }
        break;
    }
    case BlockCellKind::Held:
        for (const int owner : cell.owners) {
            const trace::PagedRequestState& request = paged.requests[static_cast<std::size_t>(owner)];
            const auto group = static_cast<std::size_t>(std::max(0, cell.group));
            if (group >= request.blockTables.size()) {
                continue;
            }
            const std::vector<std::int32_t>& table = request.blockTables[group];
            const auto slot = std::find(table.begin(), table.end(), block) - table.begin();
            const std::int64_t begin = slot * paged.blockSize;
            const std::int64_t end = std::min(begin + paged.blockSize, request.numComputedTokens);
            lines << (end > begin ? tr("held by %1: slot %2, %3")
                                        .arg(QString::fromStdString(request.id))
                                        .arg(slot)
                                        .arg(tokensOf(request.id, begin, end))
                                  : tr("held by %1: slot %2, for tokens from %3 (not computed yet)")
                                        .arg(QString::fromStdString(request.id))
                                        .arg(slot)
                                        .arg(begin));
        }
        if (cell.owners.empty()) {
            lines << tr("held by a table of another layer group");
        }
        lines << tr("reference count %1").arg(cell.refCnt);
        break;
    }
    if (state.cached) {
        lines << tr("hash %1…").arg(QStringLiteral("%1").arg(state.hash, 16, 16, QLatin1Char('0')).left(10));
    }
    QStringList changes;
    if (cell.evicted) {
        changes << tr("evicted (its old hash forgotten)");
    }
    if (cell.allocated) {
        changes << tr("allocated");
    }
    if (cell.touched) {
        changes << tr("reused by a prefix hit");
    }
    if (!changes.isEmpty()) {
        lines << tr("this step: %1").arg(changes.join(QStringLiteral(", ")));
    }
    return lines.join(QLatin1Char('\n'));
}

void BlockPoolView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    const trace::PagedState& paged = m_session.state()->paged;
    if (!paged.active) {
        return;
    }
    painter.setRenderHint(QPainter::Antialiasing, false);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
    const QString selected = m_selection.selectedRequest();
    for (const BlockCell& cell : m_cells) {
        const CellRect r = PoolGeometry::cellRect(m_layout, cell.block);
        const QRectF box(r.x, r.y, r.size, r.size);
        painter.setOpacity(cell.otherGroup ? 0.3 : 1.0);
        QColor fill = kFree;
        switch (cell.kind) {
        case BlockCellKind::Free:
            painter.fillRect(box, kFree);
            break;
        case BlockCellKind::CachedFree:
            fill = kCachedFree;
            painter.fillRect(box, fill);
            break;
        case BlockCellKind::Null:
            fill = kNull;
            painter.fillRect(box, fill);
            break;
        case BlockCellKind::Held:
            if (cell.owners.empty()) {
                fill = kOtherGroupHeld;
                painter.fillRect(box, fill);
            } else {
                // A shared block shows each holder's colour in a band of its own.
                const double band = box.width() / static_cast<double>(cell.owners.size());
                for (std::size_t i = 0; i < cell.owners.size(); ++i) {
                    painter.fillRect(
                        QRectF(box.left() + band * static_cast<double>(i), box.top(), band, box.height()),
                        PlotStyle::requestColour(cell.owners[i]));
                }
                fill = PlotStyle::requestColour(cell.owners.front());
            }
            break;
        }
        const bool shared = cell.refCnt > 1;
        painter.setPen(shared ? QPen(QColor(25, 25, 30), 3) : QPen(QColor(150, 155, 165), 1));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(shared ? box.adjusted(1, 1, -1, -1) : box.adjusted(0, 0, -1, -1));
        // The selected request's blocks are underlined.
        if (!selected.isEmpty()) {
            for (const int owner : cell.owners) {
                if (QString::fromStdString(paged.requests[static_cast<std::size_t>(owner)].id) == selected) {
                    painter.fillRect(QRectF(box.left() + 3, box.bottom() - 5, box.width() - 6, 3),
                                     QColor(20, 20, 20));
                }
            }
        }
        painter.setFont(small);
        painter.setPen(textOn(fill));
        painter.drawText(box.adjusted(3, 1, -2, -1), Qt::AlignLeft | Qt::AlignTop,
                         QString::number(cell.block));
        if (cell.kind == BlockCellKind::CachedFree && box.width() >= 24) {
            painter.drawText(box, Qt::AlignCenter, QStringLiteral("#%1").arg(cell.freeRank));
        }
        if (shared && box.width() >= 24) {
            painter.drawText(box.adjusted(2, 1, -4, -3), Qt::AlignRight | Qt::AlignBottom,
                             QStringLiteral("×%1").arg(cell.refCnt));
        }
        painter.setOpacity(1.0);
        const double corner = std::max(5.0, box.width() / 4.0);
        if (cell.allocated) {
            const QPointF points[] = {box.topRight(), box.topRight() + QPointF(-corner, 0),
                                      box.topRight() + QPointF(0, corner)};
            painter.setPen(Qt::NoPen);
            painter.setBrush(kAllocated);
            painter.drawPolygon(points, 3);
            painter.setBrush(Qt::NoBrush);
        }
        if (cell.touched) {
            painter.setPen(QPen(kTouched, 2));
            painter.drawRect(box.adjusted(4, 4, -5, -5));
        }
        if (cell.evicted) {
            painter.setPen(QPen(kEvicted, 2));
            painter.drawLine(box.topLeft() + QPointF(3, 3), box.bottomRight() - QPointF(3, 3));
            painter.drawLine(box.topRight() + QPointF(-3, 3), box.bottomLeft() + QPointF(3, -3));
        }
    }

    // The legend: requests by colour, then what the cell kinds and marks mean.
    const QFontMetrics metrics(font());
    painter.setFont(font());
    const int available = std::max(1, width() - 2 * kPoolMargin);
    int x = 0;
    int y = height() - legendHeight() + 2;
    const QStringList entries = legendEntries();
    const int requests = static_cast<int>(paged.requests.size());
    for (int index = 0; index < entries.size(); ++index) {
        const int entryWidth = kSwatch + 4 + metrics.horizontalAdvance(entries[index]) + 14;
        if (x > 0 && x + entryWidth > available) {
            x = 0;
            y += metrics.height() + 4;
        }
        const QRect swatch(kPoolMargin + x, y + (metrics.height() - kSwatch) / 2, kSwatch, kSwatch);
        painter.setPen(QColor(150, 155, 165));
        if (index < requests) {
            painter.fillRect(swatch, PlotStyle::requestColour(index));
        } else {
            switch (index - requests) {
            case 0:
                painter.fillRect(swatch, kFree);
                break;
            case 1:
                painter.fillRect(swatch, kCachedFree);
                break;
            case 2:
                painter.setPen(QPen(QColor(25, 25, 30), 2));
                break;
            case 3: {
                const QPointF points[] = {swatch.topRight(), swatch.topRight() + QPointF(-7, 0),
                                          swatch.topRight() + QPointF(0, 7)};
                painter.setBrush(kAllocated);
                painter.setPen(Qt::NoPen);
                painter.drawPolygon(points, 3);
                painter.setBrush(Qt::NoBrush);
                painter.setPen(QColor(150, 155, 165));
                break;
            }
            case 4:
                painter.setPen(QPen(kTouched, 2));
                break;
            case 5:
                painter.setPen(QPen(kEvicted, 2));
                painter.drawLine(swatch.topLeft(), swatch.bottomRight());
                painter.drawLine(swatch.topRight(), swatch.bottomLeft());
                painter.setPen(QColor(150, 155, 165));
                break;
            default:
                break;
            }
        }
        painter.drawRect(swatch.adjusted(0, 0, -1, -1));
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRect(kPoolMargin + x + kSwatch + 4, y, entryWidth, metrics.height()),
                         Qt::AlignLeft | Qt::AlignVCenter, entries[index]);
        x += entryWidth;
    }
}

void BlockPoolView::mouseMoveEvent(QMouseEvent* event) {
    const int block = blockAt(event->position().toPoint());
    if (block < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), describeBlock(block), this);
}

void BlockPoolView::mousePressEvent(QMouseEvent* event) {
    const int block = blockAt(event->position().toPoint());
    if (block < 0 || m_cells[static_cast<std::size_t>(block)].owners.empty()) {
        return;
    }
    const auto& request = m_session.state()->paged.requests[static_cast<std::size_t>(
        m_cells[static_cast<std::size_t>(block)].owners.front())];
    const QString id = QString::fromStdString(request.id);
    m_selection.setSelectedRequest(id);
    Q_EMIT requestClicked(id);
}

} // namespace kvscope::gui
