// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/CompareView.h"

#include "kvscope/gui/models/PressExplainer.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/BlockPoolView.h"
#include "kvscope/gui/views/CursorPlot.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/views/TranscriptView.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>
#include <qcustomplot.h>

namespace kvscope::gui {
namespace {

QString describe(const SessionController& session) {
    if (session.mode() == SessionController::Mode::Empty) {
        return QObject::tr("(none)");
    }
    const trace::SessionMetadata& metadata = session.metadata();
    const std::optional<config::PressSettings> press = config::PressSettings::fromCacheSettings(metadata.cacheSettingsJson);
    const QString pressed = press ? QObject::tr(", press %1 (ratio %2)")
                                        .arg(PressExplainer::displayName(press->name).toHtmlEscaped())
                                        .arg(press->ratio)
                                  : QObject::tr(", no press");
    return QStringLiteral("%1 — %2, %3 cache%4").arg(session.name().toHtmlEscaped(),
                                                  QString::fromStdString(metadata.model).toHtmlEscaped(),
                                                  QString::fromStdString(metadata.cacheKind).toHtmlEscaped(), pressed);
}

} // namespace

CompareView::CompareView(SessionController& a, SessionController& b, ViewSelection& selection,
                         QWidget* parent)
    : QWidget(parent), m_a(a), m_b(b), m_header(new QLabel(this)),
      m_plot(new CursorPlot(this)), m_pages(new QStackedWidget(this)),
      m_servingTable(new QTableWidget(this)) {
    m_header->setTextFormat(Qt::RichText);
    m_header->setWordWrap(true);
    PlotStyle::setUp(m_plot, tr("Next-token distributions: KL(A ‖ B) and top-1 agreement per step"));
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("KL divergence (nats)"));
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setLabel(tr("top-1 agrees"));
    m_plot->yAxis2->setRange(-0.05, 1.15);
    QCPGraph* kl = m_plot->addGraph();
    kl->setName(tr("KL(A ‖ B)"));
    kl->setPen(QPen(PlotStyle::seriesColour(0), 1));
    kl->setBrush(QColor(38, 139, 210, 40));
    QCPGraph* agree = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    agree->setName(tr("top-1 agreement"));
    agree->setPen(QPen(PlotStyle::seriesColour(1), 1));
    agree->setLineStyle(QCPGraph::lsStepCenter);
    PlotStyle::legendBelow(m_plot);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_divergence = new QCPItemStraightLine(m_plot);
    m_divergence->setPen(QPen(QColor(203, 75, 22), 1.2, Qt::DashLine));
    m_divergence->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_divergence->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_message = PlotStyle::addMessage(m_plot);

    auto* maps = new QSplitter(Qt::Horizontal, this);
    auto* mapA = new OccupancyMapView(a, selection, maps);
    auto* mapB = new OccupancyMapView(b, selection, maps);
    mapA->setToolTip(tr("Session A"));
    mapB->setToolTip(tr("Session B"));
    maps->addWidget(mapA);
    maps->addWidget(mapB);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_header);
    // Both texts side by side, each marked from the token where it parts from the other.
    auto* transcripts = new QSplitter(Qt::Horizontal, this);
    m_transcriptA = new TranscriptView(a, selection, transcripts);
    m_transcriptB = new TranscriptView(b, selection, transcripts);
    m_transcriptA->setToolTip(tr("Session A"));
    m_transcriptB->setToolTip(tr("Session B"));
    transcripts->addWidget(m_transcriptA);
    transcripts->addWidget(m_transcriptB);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(transcripts);
    split->addWidget(maps);
    split->addWidget(m_plot);
    m_pages->addWidget(split);

    // Serving sessions: their numbers side by side, then both pools at the step.
    m_servingTable->setColumnCount(3);
    m_servingTable->setHorizontalHeaderLabels({tr("A"), tr("B"), tr("B − A")});
    m_servingTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_servingTable->setSelectionMode(QAbstractItemView::NoSelection);
    m_servingTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_servingTable->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_servingTable->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* serving = new QSplitter(Qt::Horizontal, this);
    auto* poolA = new BlockPoolView(a, selection, serving);
    auto* poolB = new BlockPoolView(b, selection, serving);
    poolA->setToolTip(tr("Session A's pool at the step"));
    poolB->setToolTip(tr("Session B's pool at the step"));
    serving->addWidget(m_servingTable);
    serving->addWidget(poolA);
    serving->addWidget(poolB);
    serving->setStretchFactor(0, 2);
    serving->setStretchFactor(1, 3);
    serving->setStretchFactor(2, 3);
    m_pages->addWidget(serving);
    layout->addWidget(m_pages, 1);

    for (SessionController* session : {&a, &b}) {
        connect(session, &SessionController::sessionLoaded, this, &CompareView::recompute);
        connect(session, &SessionController::sessionGrew, this, &CompareView::recompute);
    }
    // Steps in sync: B shows A's step (clamped to what B has).
    connect(&a, &SessionController::stepChanged, this, [this](qint64 step) {
        m_b.setCurrentStep(step);
        moveCursor();
        updateStepRow();
    });
    recompute();
}

QString CompareView::header() const { return m_header->text(); }

bool CompareView::showsServing() const {
    return m_pages->currentIndex() == 1;
}

void CompareView::recompute() {
    if (m_a.paged().active()) {
        recomputeServing();
        return;
    }
    m_pages->setCurrentIndex(0);
    m_comparison = LogitsComparison::compare(m_a.timeline(), m_b.timeline());
    m_firstDivergence = LogitsComparison::firstDivergentStep(m_comparison);
    QVector<double> steps;
    QVector<double> kl;
    QVector<double> agree;
    double maxKl = 0.0;
    int agreeing = 0;
    int withLogits = 0;
    for (const StepComparison& step : m_comparison) {
        if (!step.hasLogits) {
            continue;
        }
        steps << static_cast<double>(step.step);
        kl << step.klDivergence;
        agree << (step.top1Agrees ? 1.0 : 0.0);
        maxKl = std::max(maxKl, step.klDivergence);
        agreeing += step.top1Agrees;
        ++withLogits;
    }
    m_plot->graph(0)->setData(steps, kl, true);
    m_plot->graph(1)->setData(steps, agree, true);
    m_plot->xAxis->setRange(0, std::max<double>(1.0, static_cast<double>(m_comparison.size()) - 1));
    m_plot->yAxis->setRange(0, std::max(1e-3, maxKl * 1.15));
    m_divergence->setVisible(m_firstDivergence >= 0);
    m_divergence->point1->setCoords(static_cast<double>(m_firstDivergence), 0);
    m_divergence->point2->setCoords(static_cast<double>(m_firstDivergence), 1);
    const bool ready = m_b.mode() != SessionController::Mode::Empty;
    m_message->setText(!ready ? tr("Compare: open or run a second session (Compare menu)")
                       : withLogits == 0 ? tr("These sessions recorded no Logits events to compare")
                                         : QString());
    m_message->setVisible(!m_message->text().isEmpty());
    m_header->setText(tr("<b>A</b>: %1<br><b>B</b>: %2<br>%3")
                          .arg(describe(m_a), describe(m_b))
                          .arg(m_firstDivergence >= 0
                                   ? tr("<span style='color:#cb4b16'><b>First divergent token at step %1.</b></span> "
                                        "Top-1 agreement %2 of %3 steps.")
                                         .arg(m_firstDivergence)
                                         .arg(agreeing)
                                         .arg(withLogits)
                                   : tr("No divergent token over %1 common steps; top-1 agreement %2 of %3.")
                                         .arg(m_comparison.size())
                                         .arg(agreeing)
                                         .arg(withLogits)));
    // Each transcript marks the divergent step's token at its own position (the prompts may differ in length).
    for (auto [session, transcript] : {std::pair{&m_a, m_transcriptA}, std::pair{&m_b, m_transcriptB}}) {
        transcript->setPartingPosition(
            m_firstDivergence >= 0 ? SessionTokens::producedPosition(session->metadata(), m_firstDivergence, &session->speculation()) : -1);
    }
    moveCursor();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void CompareView::moveCursor() {
    m_plot->setCursorKey(static_cast<double>(m_a.currentStep()));
}

} // namespace kvscope::gui

namespace kvscope::gui {
namespace {

/// The rows of the serving comparison; the last one follows the step.
enum ServingRow { Steps, HitRate, HitTokens, Preemptions, Evictions, PeakBlocks, BlocksAtStep, RowCount };

QString poolOf(const SessionController& session) {
    if (!session.paged().active()) {
        return session.mode() == SessionController::Mode::Empty ? QObject::tr("(none)")
                                                                : QObject::tr("not a serving session");
    }
    return QStringLiteral("%1 — %2").arg(
        session.name().toHtmlEscaped(),
        QString::fromStdString(ServingSummary::describePool(session.paged().pool())).toHtmlEscaped());
}

QString signedNumber(double value, int decimals = 0) {
    return (value > 0 ? QStringLiteral("+") : QString()) + QString::number(value, 'f', decimals);
}

} // namespace

void CompareView::recomputeServing() {
    m_pages->setCurrentIndex(1);
    m_servingA = ServingSummary::of(m_a.paged());
    m_servingB = ServingSummary::of(m_b.paged());
    const ServingSummary& a = m_servingA;
    const ServingSummary& b = m_servingB;
    const bool hasB = m_b.paged().active();
    m_servingTable->setRowCount(RowCount);
    m_servingTable->setVerticalHeaderLabels({tr("Steps to finish"), tr("Prefix hit rate"),
                                             tr("Prompt tokens hit"), tr("Preemptions"), tr("Evictions"),
                                             tr("Peak blocks used"), tr("Blocks used at this step")});
    const auto steps = [](const ServingSummary& summary) {
        return summary.finished ? QString::number(summary.steps) : tr("%1 so far").arg(summary.steps);
    };
    const auto rate = [](const ServingSummary& summary) {
        return QStringLiteral("%1 %").arg(100.0 * summary.prefixHitRate(), 0, 'f', 1);
    };
    const auto hits = [](const ServingSummary& summary) {
        return tr("%1 of %2").arg(summary.hitTokens).arg(summary.queryTokens);
    };
    const auto peak = [](const ServingSummary& summary) {
        return tr("%1 of %2").arg(summary.peakBlocksUsed).arg(summary.numBlocks);
    };
    const auto set = [this](int row, int column, const QString& text) {
        auto* item = new QTableWidgetItem(text);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_servingTable->setItem(row, column, item);
    };
    const ServingSummary* sides[] = {&a, &b};
    for (int column = 0; column < 2; ++column) {
        const ServingSummary& summary = *sides[column];
        const bool shown = column == 0 || hasB;
        set(Steps, column, shown ? steps(summary) : QString());
        set(HitRate, column, shown ? rate(summary) : QString());
        set(HitTokens, column, shown ? hits(summary) : QString());
        set(Preemptions, column, shown ? QString::number(summary.preemptions) : QString());
        set(Evictions, column, shown ? QString::number(summary.evictions) : QString());
        set(PeakBlocks, column, shown ? peak(summary) : QString());
    }
    set(Steps, 2, hasB ? signedNumber(static_cast<double>(b.steps - a.steps)) : QString());
    set(HitRate, 2,
        hasB ? signedNumber(100.0 * (b.prefixHitRate() - a.prefixHitRate()), 1) + QStringLiteral(" pt")
             : QString());
    set(HitTokens, 2, hasB ? signedNumber(static_cast<double>(b.hitTokens - a.hitTokens)) : QString());
    set(Preemptions, 2, hasB ? signedNumber(static_cast<double>(b.preemptions - a.preemptions)) : QString());
    set(Evictions, 2, hasB ? signedNumber(static_cast<double>(b.evictions - a.evictions)) : QString());
    set(PeakBlocks, 2,
        hasB ? signedNumber(static_cast<double>(b.peakBlocksUsed - a.peakBlocksUsed)) : QString());
    updateStepRow();
    // The numbers are the point: the table keeps the width they need, the pools share the rest.
    m_servingTable->resizeColumnsToContents();
    int width = m_servingTable->verticalHeader()->sizeHint().width() + 2 * m_servingTable->frameWidth() + 8;
    for (int column = 0; column < m_servingTable->columnCount(); ++column) {
        width += m_servingTable->columnWidth(column);
    }
    m_servingTable->setMinimumWidth(width);

    QString verdict;
    if (!hasB) {
        verdict = m_b.mode() == SessionController::Mode::Empty
                      ? tr("Compare: serve the same workload with other settings (Compare menu)")
                      : tr("B is not a serving session: compare a serving session with another one");
    } else if (!a.finished || !b.finished) {
        verdict = tr("Still running: the numbers so far.");
    } else {
        verdict =
            tr("B finishes in <b>%1</b> steps against A's %2, with a prefix hit rate of <b>%3</b> against "
               "%4.")
                .arg(b.steps)
                .arg(a.steps)
                .arg(rate(b), rate(a));
    }
    m_header->setText(tr("<b>A</b>: %1<br><b>B</b>: %2<br>%3").arg(poolOf(m_a), poolOf(m_b), verdict));
}

void CompareView::updateStepRow() {
    if (!showsServing()) {
        return;
    }
    const auto usedAt = [](const SessionController& session) -> std::optional<std::int32_t> {
        const PagedHistory& history = session.paged();
        if (!history.active() || history.stepCount() == 0) {
            return std::nullopt;
        }
        return history.metrics(std::min(session.currentStep(), history.stepCount() - 1)).usedBlocks;
    };
    const std::optional<std::int32_t> a = usedAt(m_a);
    const std::optional<std::int32_t> b = usedAt(m_b);
    const QString texts[] = {a ? QString::number(*a) : QString(), b ? QString::number(*b) : QString(),
                             a && b ? signedNumber(*b - *a) : QString()};
    for (int column = 0; column < 3; ++column) {
        auto* item = new QTableWidgetItem(texts[column]);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_servingTable->setItem(BlocksAtStep, column, item);
    }
}

} // namespace kvscope::gui
