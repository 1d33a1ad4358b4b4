// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/ChannelErrorView.h"

#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/CellToolTip.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>

namespace kvscope::gui {
namespace {

constexpr int kChannelLabelWidth = 44;
constexpr int kPanelGap = 28;
constexpr int kRightMargin = 10;
constexpr int kTitleHeight = 16;
/// Under each panel: the heads' names, then the colour scale.
constexpr int kFooterHeight = 40;
constexpr double kChannelMaximumRowHeight = 16.0;
/// Rows closer than this share a layer label (every k-th row is labelled).
constexpr double kLabelPixels = 13.0;

QString figure(double value) { return QString::number(value, 'g', 3); }

/// The cache's K or V type and rotation as the session's settings name them (type_k, type_v, attn_rotation).
struct CacheTypes {
    QString keys;
    QString values;
    std::optional<bool> rotation;
};

CacheTypes cacheTypesOf(const std::string& settingsJson) {
    const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(settingsJson)).object();
    CacheTypes types;
    types.keys = settings.value(QStringLiteral("type_k")).toString();
    types.values = settings.value(QStringLiteral("type_v")).toString();
    if (settings.contains(QStringLiteral("attn_rotation"))) {
        types.rotation = settings.value(QStringLiteral("attn_rotation")).toBool();
    }
    return types;
}

} // namespace

ChannelErrorView::ChannelErrorView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMouseTracking(true);
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(8, 4, 8, 4);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Show")));
    m_measure = new QComboBox;
    m_measure->addItem(tr("quantisation error (RMS)"));
    m_measure->addItem(tr("channel size (RMS of the values given)"));
    m_measure->addItem(tr("error relative to the channel's size"));
    m_measure->setToolTip(tr("What colours each channel: its error, its size (outlier channels stand out), or the "
                             "error divided by the size"));
    controls->addWidget(m_measure);
    controls->addStretch(1);
    column->addLayout(controls);
    m_headline = new QLabel;
    m_headline->setWordWrap(true);
    m_headline->setTextFormat(Qt::PlainText);
    column->addWidget(m_headline);
    column->addStretch(1);

    connect(m_measure, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        m_history.reset();
        refresh();
    });
    connect(&session, &SessionController::sessionGrew, this, [this] { refresh(); });
    connect(&session, &SessionController::stepChanged, this, [this] { refresh(); });
    connect(&selection, &ViewSelection::selectionChanged, this, [this] { update(); });
    refresh();
}

bool ChannelErrorView::hasReports() const {
    m_history.update(m_session.timeline());
    return !m_history.empty();
}

ChannelErrorView::Measure ChannelErrorView::measure() const { return static_cast<Measure>(m_measure->currentIndex()); }

void ChannelErrorView::setMeasure(Measure measure) { m_measure->setCurrentIndex(static_cast<int>(measure)); }

double ChannelErrorView::measured(Measure measure, float error, float size) {
    switch (measure) {
    case Measure::Error:
        return error;
    case Measure::Size:
        return size;
    case Measure::Relative:
        return size > 0.0F ? static_cast<double>(error) / static_cast<double>(size) : 0.0;
    }
    return 0.0;
}

std::optional<double> ChannelErrorView::cellOf(const ChannelErrorHistory::Report* report, bool keys, int head,
                                               int channel, Measure measure) {
    if (report == nullptr || head < 0 || head >= report->event.heads || channel < 0) {
        return std::nullopt;
    }
    const std::vector<float>& errors = keys ? report->event.keyError : report->event.valueError;
    const std::vector<float>& sizes = keys ? report->event.keySize : report->event.valueSize;
    const auto dim = static_cast<int>(errors.size() / static_cast<std::size_t>(report->event.heads));
    if (channel >= dim) {
        return std::nullopt;
    }
    const auto index = static_cast<std::size_t>(head * dim + channel);
    return measured(measure, errors[index], sizes[index]);
}

std::optional<double> ChannelErrorView::valueAt(int layer, bool keys, int head, int channel) const {
    m_history.update(m_session.timeline());
    return cellOf(m_history.latestAt(layer, m_session.currentStep()), keys, head, channel, measure());
}

double ChannelErrorView::scaleTop(bool keys) const {
    m_history.update(m_session.timeline());
    double top = 0.0;
    for (int layer = 0; layer < m_history.layerCount(); ++layer) {
        const ChannelErrorHistory::Report* report = m_history.latestAt(layer, m_session.currentStep());
        if (report == nullptr) {
            continue;
        }
        const std::vector<float>& errors = keys ? report->event.keyError : report->event.valueError;
        const std::vector<float>& sizes = keys ? report->event.keySize : report->event.valueSize;
        for (std::size_t index = 0; index < errors.size(); ++index) {
            top = std::max(top, measured(measure(), errors[index], sizes[index]));
        }
    }
    return top;
}

const ChannelErrorHistory::Report* ChannelErrorView::shapeReport() const {
    for (int layer = 0; layer < m_history.layerCount(); ++layer) {
        if (const ChannelErrorHistory::Report* report = m_history.latestAt(layer, m_session.currentStep())) {
            return report;
        }
    }
    return nullptr;
}

QString ChannelErrorView::headline() const {
    m_history.update(m_session.timeline());
    if (m_history.empty()) {
        return {};
    }
    const std::int64_t step = m_session.currentStep();
    const CacheTypes types = cacheTypesOf(m_session.metadata().cacheSettingsJson);
    QString text = tr("Step %1: %2 per layer, KV head and channel").arg(step).arg(m_measure->currentText());
    if (!types.keys.isEmpty() && !types.values.isEmpty()) {
        text += tr("; keys %1, values %2").arg(types.keys, types.values);
        if (types.rotation) {
            text += *types.rotation ? tr(", rotated (Walsh-Hadamard) before quantising")
                                    : tr(", not rotated (--attn-rotation off)");
        }
    }
    text += QLatin1Char('.');
    // The worst key channel of every layer's latest report: where a real model's outlier keys cost the most.
    std::optional<ChannelErrorHistory::Channel> worst;
    int worstLayer = -1;
    std::int64_t tokens = 0;
    double median = 0.0;
    for (int layer = 0; layer < m_history.layerCount(); ++layer) {
        const ChannelErrorHistory::Report* report = m_history.latestAt(layer, step);
        if (report == nullptr) {
            continue;
        }
        const auto channel =
            ChannelErrorHistory::worst(report->event.keyError, report->event.keySize, report->event.heads);
        if (channel && (!worst || channel->error > worst->error)) {
            worst = channel;
            worstLayer = layer;
            tokens = report->event.tokens;
            median = ChannelErrorHistory::headMedian(report->event.keySize, report->event.heads, channel->head);
        }
    }
    if (!worst) {
        return text + tr(" No layer has quantised a token by this step.");
    }
    text += tr(" Worst key channel: layer %1, head %2, channel %3, error %4 over its %5 tokens")
                .arg(worstLayer)
                .arg(worst->head)
                .arg(worst->channel)
                .arg(figure(worst->error))
                .arg(tokens);
    if (median > 0.0) {
        text += tr(" (its keys %1× the head's median channel)").arg(figure(worst->size / median));
    }
    return text + QLatin1Char('.');
}

ChannelErrorView::Layout ChannelErrorView::layoutOf() const {
    Layout layout;
    const ChannelErrorHistory::Report* shape = shapeReport();
    if (shape == nullptr) {
        return layout;
    }
    layout.layers = std::max<int>(m_history.layerCount(), m_session.timeline().layerCount());
    layout.heads = shape->event.heads;
    layout.keyDim = static_cast<int>(shape->event.keyError.size()) / layout.heads;
    layout.valueDim = static_cast<int>(shape->event.valueError.size()) / layout.heads;
    const int top = m_headline->geometry().bottom() + 6 + kTitleHeight;
    const int height = std::max(1, this->height() - top - kFooterHeight - 4);
    layout.rowHeight = std::min(kChannelMaximumRowHeight, static_cast<double>(height) / std::max(layout.layers, 1));
    const int rows = std::max(1, static_cast<int>(layout.rowHeight * layout.layers));
    const int width = std::max(2, this->width() - kChannelLabelWidth - kPanelGap - kRightMargin);
    const int keyColumns = layout.heads * layout.keyDim;
    const int valueColumns = layout.heads * layout.valueDim;
    const int keyWidth = std::max(1, width * keyColumns / std::max(keyColumns + valueColumns, 1));
    layout.keys = QRect(kChannelLabelWidth, top, keyWidth, rows);
    layout.values = QRect(kChannelLabelWidth + keyWidth + kPanelGap, top, std::max(1, width - keyWidth), rows);
    return layout;
}

void ChannelErrorView::refresh() {
    m_history.update(m_session.timeline());
    m_headline->setText(headline());
    update();
}

void ChannelErrorView::paintPanel(QPainter& painter, const Layout& layout, bool keys) const {
    const QRect panel = keys ? layout.keys : layout.values;
    const int dim = keys ? layout.keyDim : layout.valueDim;
    const int columns = layout.heads * dim;
    const double top = scaleTop(keys);
    QImage image(columns, layout.layers, QImage::Format_RGB32);
    image.fill(QColor(236, 236, 240));
    const Measure shown = measure();
    for (int layer = 0; layer < layout.layers; ++layer) {
        // Each row's report looked up once, not once a cell.
        const ChannelErrorHistory::Report* report = m_history.latestAt(layer, m_session.currentStep());
        for (int head = 0; head < layout.heads; ++head) {
            for (int channel = 0; channel < dim; ++channel) {
                if (const std::optional<double> value = cellOf(report, keys, head, channel, shown)) {
                    image.setPixelColor(head * dim + channel, layer,
                                        PlotStyle::heatColour(top > 0.0 ? *value / top : 0.0));
                }
            }
        }
    }
    painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
    painter.drawImage(panel, image);
    const CacheTypes types = cacheTypesOf(m_session.metadata().cacheSettingsJson);
    const QString type = keys ? types.keys : types.values;
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawText(QRect(panel.left(), panel.top() - kTitleHeight, panel.width(), kTitleHeight),
                     Qt::AlignLeft | Qt::AlignVCenter,
                     (keys ? tr("Keys") : tr("Values")) + (type.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(type)));
    // The heads apart, each named under its band.
    const double headWidth = static_cast<double>(panel.width()) / std::max(layout.heads, 1);
    for (int head = 0; head < layout.heads; ++head) {
        const double left = panel.left() + head * headWidth;
        if (head > 0) {
            painter.setPen(QPen(Qt::white, 2));
            painter.drawLine(QPointF(left, panel.top()), QPointF(left, panel.bottom() + 1));
        }
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRectF(left, panel.bottom() + 2, headWidth, 14), Qt::AlignCenter,
                         headWidth > 60 ? tr("head %1 (%2 ch.)").arg(head).arg(dim) : QString::number(head));
    }
    // The selected layer's row, outlined.
    const int selected = m_selection.selectedLayer();
    if (selected >= 0 && selected < layout.layers) {
        painter.setPen(QPen(PlotStyle::cursorColour(), 1.5));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(QRectF(panel.left(), panel.top() + selected * layout.rowHeight, panel.width(),
                                layout.rowHeight));
    }
    // The colour scale: 0 to the panel's largest value.
    const QRect scale(panel.left(), panel.bottom() + 20, std::min(panel.width(), 220), 8);
    QLinearGradient gradient(scale.topLeft(), scale.topRight());
    for (int stop = 0; stop <= 8; ++stop) {
        gradient.setColorAt(stop / 8.0, PlotStyle::heatColour(stop / 8.0));
    }
    painter.fillRect(scale, gradient);
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawText(QRect(scale.right() + 6, scale.top() - 4, 160, 16), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("0 … %1").arg(figure(top)));
}

void ChannelErrorView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    m_history.update(m_session.timeline());
    const Layout layout = layoutOf();
    if (layout.layers == 0) {
        const int top = m_headline->geometry().bottom() + 6;
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(QRect(0, top, width(), height() - top), Qt::AlignCenter | Qt::TextWordWrap,
                         m_history.empty()
                             ? tr("No channel errors in this session.\nStart a session with cache \"llamacpp\" and a "
                                  "quantised K or V type (q8_0, q4_0, …)\nto see each layer's quantisation error per "
                                  "KV head and channel.")
                             : tr("No layer has quantised a token by this step."));
        return;
    }
    paintPanel(painter, layout, true);
    paintPanel(painter, layout, false);
    painter.setPen(palette().color(QPalette::WindowText));
    const int every = std::max(1, static_cast<int>(std::ceil(kLabelPixels / layout.rowHeight)));
    for (int layer = 0; layer < layout.layers; layer += every) {
        // Centred on its row, so that the label and the selected row's outline line up.
        const double middle = layout.keys.top() + (layer + 0.5) * layout.rowHeight;
        painter.drawText(QRectF(0, middle - kLabelPixels / 2, kChannelLabelWidth - 6, kLabelPixels),
                         Qt::AlignRight | Qt::AlignVCenter, tr("L%1").arg(layer));
    }
}

int ChannelErrorView::layerAt(const QPoint& point) const {
    const Layout layout = layoutOf();
    if (layout.layers == 0 || (!layout.keys.contains(point) && !layout.values.contains(point))) {
        return -1;
    }
    const int layer = static_cast<int>((point.y() - layout.keys.top()) / layout.rowHeight);
    return layer >= 0 && layer < layout.layers ? layer : -1;
}

QString ChannelErrorView::toolTipAt(const QPoint& point) const {
    const Layout layout = layoutOf();
    const int layer = layerAt(point);
    if (layer < 0) {
        return {};
    }
    const bool keys = layout.keys.contains(point);
    const QRect panel = keys ? layout.keys : layout.values;
    const int dim = keys ? layout.keyDim : layout.valueDim;
    const int column = std::clamp(static_cast<int>(static_cast<double>(point.x() - panel.left()) *
                                                   (layout.heads * dim) / std::max(panel.width(), 1)),
                                  0, layout.heads * dim - 1);
    const int head = column / dim;
    const int channel = column % dim;
    const ChannelErrorHistory::Report* report = m_history.latestAt(layer, m_session.currentStep());
    if (report == nullptr) {
        return tr("Layer %1: no token quantised by this step").arg(layer);
    }
    const std::vector<float>& errors = keys ? report->event.keyError : report->event.valueError;
    const std::vector<float>& sizes = keys ? report->event.keySize : report->event.valueSize;
    const auto reportDim = static_cast<int>(errors.size()) / report->event.heads;
    if (head >= report->event.heads || channel >= reportDim) {
        return {};
    }
    const auto index = static_cast<std::size_t>(head * reportDim + channel);
    const double median = ChannelErrorHistory::headMedian(sizes, report->event.heads, head);
    QString text = tr("Layer %1, %2 head %3, channel %4\nquantisation error %5 (RMS over the %6 tokens quantised "
                      "by step %7)\nchannel size %8 (RMS)")
                       .arg(layer)
                       .arg(keys ? tr("key") : tr("value"))
                       .arg(head)
                       .arg(channel)
                       .arg(figure(errors[index]))
                       .arg(report->event.tokens)
                       .arg(report->step)
                       .arg(figure(sizes[index]));
    if (median > 0.0) {
        text += tr(", %1× the head's median channel").arg(figure(sizes[index] / median));
    }
    text += tr("\nerror ÷ size %1\nlayer's error over all its %2 channels %3")
                .arg(figure(measured(Measure::Relative, errors[index], sizes[index])))
                .arg(keys ? tr("key") : tr("value"))
                .arg(figure(ChannelErrorHistory::overall(errors)));
    return text;
}

bool ChannelErrorView::event(QEvent* event) {
    return CellToolTip::handle(*this, event, [this](const QPoint& point) { return toolTipAt(point); }) ||
           QWidget::event(event);
}

void ChannelErrorView::mousePressEvent(QMouseEvent* event) {
    const int layer = layerAt(event->position().toPoint());
    if (layer >= 0) {
        m_selection.setSelectedLayer(layer);
    }
    QWidget::mousePressEvent(event);
}

} // namespace kvscope::gui
