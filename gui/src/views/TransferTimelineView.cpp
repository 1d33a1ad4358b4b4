// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/TransferTimelineView.h"

#include "kvscope/gui/views/GanttPlottable.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/session/SessionController.h"

#include <algorithm>
#include <limits>

namespace kvscope::gui {
namespace {

constexpr int kPrefetchLane = 0;
constexpr int kOffloadLane = 1;
constexpr int kFirstComputeLane = 2;
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();

std::size_t laneOf(const trace::TimedSpan& span) {
    switch (span.lane) {
    case trace::TimedSpan::Lane::Prefetch:
        return kPrefetchLane;
    case trace::TimedSpan::Lane::Offload:
        return kOffloadLane;
    case trace::TimedSpan::Lane::Compute:
        break;
    }
    return static_cast<std::size_t>(kFirstComputeLane + std::max<int>(span.layer, 0));
}

// Labels nanoseconds on the session clock as µs / ms from the session's first timed event.
class TimeTicker : public QCPAxisTicker {
public:
    explicit TimeTicker(const std::int64_t& origin) : m_origin(origin) {}

protected:
    QString getTickLabel(double tick, const QLocale&, QChar, int) override {
        const double ns = tick - static_cast<double>(m_origin);
        if (std::abs(ns) >= 1e6) {
            return QString::number(ns / 1e6, 'f', 2) + QStringLiteral(" ms");
        }
        return QString::number(ns / 1e3, 'f', 1) + QStringLiteral(" µs");
    }

private:
    const std::int64_t& m_origin;
};

} // namespace

TransferTimelineView::TransferTimelineView(SessionController& session, QWidget* parent)
    : QCustomPlot(parent), m_session(session) {
    PlotStyle::setUp(this, tr("Transfers and compute"));
    m_title = qobject_cast<QCPTextElement*>(plotLayout()->element(0, 0));
    m_gantt = new GanttPlottable(xAxis, yAxis);
    std::vector<QColor> palette;
    for (int index = 0; index < 8; ++index) {
        palette.push_back(PlotStyle::seriesColour(index));
    }
    palette.push_back(QColor(120, 130, 150)); // compute
    m_gantt->setPalette(palette);
    m_message = PlotStyle::addMessage(this);
    yAxis->setRangeReversed(true);
    yAxis->grid()->setVisible(false);
    xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TimeTicker(m_origin)));
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        rebuild(true);
        showStep();
    });
    connect(&session, &SessionController::sessionGrew, this, [this] {
        rebuild(false);
        replot(rpQueuedReplot);
    });
    connect(&session, &SessionController::stepChanged, this, [this] { showStep(); });
    rebuild(true);
}

int TransferTimelineView::laneCount() const { return static_cast<int>(m_gantt->lanes().size()); }

std::size_t TransferTimelineView::boxCount() const {
    std::size_t count = 0;
    for (const auto& lane : m_gantt->lanes()) {
        count += lane.size();
    }
    return count;
}

std::pair<double, double> TransferTimelineView::stepSpan(std::int64_t step) const {
    if (step < 0 || static_cast<std::size_t>(step) >= m_stepSpans.size() || m_stepSpans[step].first == kNone) {
        return {1.0, 0.0};
    }
    return {static_cast<double>(m_stepSpans[step].first), static_cast<double>(m_stepSpans[step].second)};
}

void TransferTimelineView::rebuild(bool fromScratch) {
    auto& lanes = m_gantt->lanes();
    const trace::TimedSpans& timed = m_session.timeline().timedSpans();
    const std::span<const trace::TimedSpan> spans = timed.spans();
    if (fromScratch || spans.size() < m_scannedSpans) {
        lanes.clear();
        m_stepSpans.clear();
        m_scannedSpans = 0;
        m_measured = false;
        m_modeled = false;
        m_origin = 0;
    }
    const int layers = m_session.timeline().layerCount();
    while (static_cast<int>(lanes.size()) < kFirstComputeLane + layers) {
        lanes.emplace_back(timed);
    }
    // Room for the new boxes counted first: an offloaded session's lanes hold millions, and growing by
    // doubling would hold up to twice that while copying.
    std::vector<std::size_t> adding(lanes.size(), 0);
    for (std::size_t index = m_scannedSpans; index < spans.size(); ++index) {
        const std::size_t lane = laneOf(spans[index]);
        if (lane >= adding.size()) {
            adding.resize(lane + 1, 0);
        }
        ++adding[lane];
    }
    while (lanes.size() < adding.size()) {
        lanes.emplace_back(timed);
    }
    std::vector<std::size_t> firstNew(lanes.size());
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
        firstNew[lane] = lanes[lane].size();
        lanes[lane].reserve(lanes[lane].size() + (lane < adding.size() ? adding[lane] : 0));
    }
    bool first = boxCount() == 0;
    for (; m_scannedSpans < spans.size(); ++m_scannedSpans) {
        const trace::TimedSpan& span = spans[m_scannedSpans];
        lanes[laneOf(span)].add(m_scannedSpans); // every lane was sized above
        (span.measured ? m_measured : m_modeled) = true;
        if (first) {
            m_origin = span.beginNs;
            first = false;
        }
        m_origin = std::min(m_origin, span.beginNs);
        const auto step = static_cast<std::size_t>(span.step);
        if (m_stepSpans.size() <= step) {
            m_stepSpans.resize(step + 1, {kNone, kNone});
        }
        auto& stepSpan = m_stepSpans[step];
        stepSpan.first = stepSpan.first == kNone ? span.beginNs : std::min(stepSpan.first, span.beginNs);
        stepSpan.second = stepSpan.second == kNone ? span.endNs : std::max(stepSpan.second, span.endNs);
    }
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
        lanes[lane].sortTail(firstNew[lane]);
    }
    updateLabels();
}

void TransferTimelineView::updateLabels() {
    const int lanes = laneCount();
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    QSharedPointer<QCPAxisTickerText> rightTicker(new QCPAxisTickerText);
    // One label per ~13 px of lane height, so names never overlap.
    const int plotHeight = std::max(60, height() - 90);
    const int every = std::max(1, (lanes * 13 + plotHeight - 1) / plotHeight);
    // The two stream lanes are neighbours: when lanes are thinner than a label, the offload lane is
    // named on the right-hand axis instead.
    const bool dense = every > 1;
    for (int lane = 0; lane < lanes; ++lane) {
        if (lane == kPrefetchLane) {
            ticker->addTick(lane, tr("prefetch (side)"));
        } else if (lane == kOffloadLane) {
            (dense ? rightTicker : ticker)->addTick(lane, tr("offload (compute)"));
        } else if ((lane - kFirstComputeLane + 1) % every == 0) { // every=1: all; else clear of the stream lanes
            ticker->addTick(lane, tr("compute L%1").arg(lane - kFirstComputeLane));
        }
    }
    yAxis->setTicker(ticker);
    yAxis2->setVisible(dense && lanes > kOffloadLane);
    yAxis2->setTicker(rightTicker);
    yAxis2->setRangeReversed(true);
    yAxis2->setRange(-0.6, std::max(lanes, 1) - 0.4);
    yAxis2->grid()->setVisible(false);
    yAxis->setRange(-0.6, std::max(lanes, 1) - 0.4);
    const QString timing = m_measured && m_modeled ? tr("measured and modeled")
                           : m_measured           ? tr("measured (device events)")
                                                  : tr("modeled (bytes ÷ bandwidth + latency; no second device)");
    if (m_title) {
        m_title->setText(boxCount() > 0 ? tr("Transfers and compute — %1; a copy's colour is its layer's").arg(timing)
                                        : tr("Transfers and compute"));
    }
    const bool empty = boxCount() == 0;
    m_message->setText(empty ? (m_session.stepCount() == 0
                                    ? tr("No session")
                                    : tr("Nothing moves between device and host in this cache.\nOnly offloaded "
                                         "caches have transfer lanes: New session → cache \"offloaded\"."))
                             : QString());
    m_message->setVisible(empty);
}

void TransferTimelineView::showStep() {
    const auto [begin, end] = stepSpan(m_session.currentStep());
    if (begin <= end) {
        const double pad = std::max(1000.0, (end - begin) * 0.04);
        xAxis->setRange(begin - pad, end + pad);
    } else if (boxCount() == 0) {
        xAxis->setRange(0, 1e6);
    }
    replot(rpQueuedReplot);
}

void TransferTimelineView::resizeEvent(QResizeEvent* event) {
    QCustomPlot::resizeEvent(event);
    updateLabels();
}

void TransferTimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
    showStep();
    QCustomPlot::mouseDoubleClickEvent(event);
}

} // namespace kvscope::gui
