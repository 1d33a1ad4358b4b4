// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/TranscriptView.h"

#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QElapsedTimer>
#include <QScrollBar>
#include <QStringList>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

constexpr int kLegendLineHeight = 16;
/// Where a fate of some layers only starts in its token's box, as a fraction of its height from the top.
constexpr double kPartialTop = 0.5;
constexpr int kMargin = 6;
/// Room around a token's text inside its box, and around a special token's smaller text.
constexpr float kTokenPadding = 2.0F;
constexpr float kSpecialPadding = 8.0F;
/// The orange the compare view marks divergence with.
const QColor kPartingColour(203, 75, 22);
/// Speculative decoding's marks: a teal underline under an accepted draft, a magenta bar where drafts were rejected.
const QColor kAcceptedDraftColour(0, 137, 123);
const QColor kRolledBackColour(194, 24, 120);
using DraftKind = SpeculationHistory::DraftMark::Kind;

/// "prompt lookup" or "the assistant model": what drafted a speculative step's tokens.
QString draftSourceName(trace::DraftSource source) {
    return source == trace::DraftSource::AssistantModel ? QObject::tr("the assistant model")
                                                        : QObject::tr("prompt lookup");
}
/// The fates a legend lists, in the order a summary ranks them (mildest first).
constexpr TokenFate kLegendFates[] = {TokenFate::Kept,    TokenFate::Quantized,     TokenFate::Offloaded, TokenFate::Masked,
                                      TokenFate::SlidOut, TokenFate::PartlyDropped, TokenFate::Dropped};

/// A piece as the transcript draws it: a newline as ↵ (the line then ends), a tab as →, control characters
/// and bytes that are not text on their own (a byte tokenizer's pieces) as a middle dot.
QString shownText(const std::string& piece) {
    QString shown;
    for (const QChar c : QString::fromUtf8(piece)) {
        shown += c == QLatin1Char('\n')                                                       ? QChar(0x21B5)
                 : c == QLatin1Char('\t')                                                     ? QChar(0x2192)
                 : c.category() == QChar::Other_Control || c == QChar::ReplacementCharacter ? QChar(0x00B7)
                                                                                              : c;
    }
    return shown;
}

/// A fate's name in the legend, shorter than PlotStyle::fateName.
QString legendName(TokenFate fate) {
    switch (fate) {
    case TokenFate::Offloaded:
        return QObject::tr("offloaded");
    case TokenFate::Masked:
        return QObject::tr("masked");
    case TokenFate::SlidOut:
        return QObject::tr("slid out");
    case TokenFate::PartlyDropped:
        return QObject::tr("dropped by some heads");
    case TokenFate::Dropped:
        return QObject::tr("dropped");
    default:
        return PlotStyle::fateName(fate);
    }
}

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

QFont specialFont(const QFont& base) {
    QFont font(QStringLiteral("monospace"));
    font.setStyleHint(QFont::Monospace);
    font.setPointSizeF(std::max(6.0, base.pointSizeF() * 0.8));
    return font;
}

QFont struckFont(const QFont& base) {
    QFont font = base;
    font.setStrikeOut(true);
    return font;
}

} // namespace

TranscriptView::TranscriptView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection), m_scroll(new QScrollBar(Qt::Vertical, this)),
      m_readTimer(new QTimer(this)) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    m_readTimer->setSingleShot(true);
    m_readTimer->setInterval(0);
    connect(m_readTimer, &QTimer::timeout, this, &TranscriptView::readSlice);
    setMouseTracking(true);
    connect(m_scroll, &QScrollBar::valueChanged, this, [this] { update(); });
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        m_parting = -1;
        readTokens(true);
        m_scroll->setValue(0);
    });
    connect(&session, &SessionController::sessionGrew, this, [this] { readTokens(false); });
    connect(&session, &SessionController::stepChanged, this, [this] {
        readFates();
        m_followPending = producedPosition() >= tokenCount();
        ensureVisible(producedPosition());
        update();
    });
    connect(&selection, &ViewSelection::selectionChanged, this, [this] {
        if (m_followLayer) {
            update();
        }
    });
    connect(&selection, &ViewSelection::positionSelected, this, [this](qint64 position) {
        ensureVisible(position);
        update();
    });
    readTokens(true);
}

void TranscriptView::setFollowLayer(bool follow) {
    m_followLayer = follow;
    relayout(); // the legend's height changes with it
    update();
}

int TranscriptView::shownLayer() const {
    if (!m_followLayer) {
        return -1;
    }
    const int selected = m_selection.selectedLayer();
    return selected >= 0 && selected < m_fates.layerCount() ? selected : (m_fates.layerCount() > 0 ? 0 : -1);
}

void TranscriptView::setPartingPosition(std::int64_t position) {
    m_parting = position;
    update();
}

void TranscriptView::appendToken(const std::string& piece, std::int64_t id) {
    Token token{shownText(piece), id, SessionTokens::isSpecial(piece)};
    const bool previousEndsWord =
        m_tokens.empty() || m_tokens.back().special || m_layoutTokens.back().lineEnd ||
        (!m_tokens.back().shown.isEmpty() && m_tokens.back().shown.back().isSpace());
    TranscriptToken laidOut;
    laidOut.width = tokenWidth(token);
    laidOut.wordStart = token.special || previousEndsWord || (!piece.empty() && isSpace(piece.front()));
    laidOut.paragraph = SessionTokens::opensTurn(piece);
    laidOut.lineEnd = piece.find('\n') != std::string::npos;
    m_tokens.push_back(std::move(token));
    m_layoutTokens.push_back(laidOut);
}

void TranscriptView::readTokens(bool newSession) {
    const trace::SessionMetadata& metadata = m_session.metadata();
    // A live session's metadata arrives with its first steps, after sessionLoaded.
    if (newSession || (m_promptLength == 0 && !metadata.promptPieces.empty())) {
        m_tokens.clear();
        m_layoutTokens.clear();
        m_fates.reset();
        m_stepsRead = 0;
        m_promptLength = static_cast<std::int64_t>(metadata.promptPieces.size());
        // A session without prompt pieces (format 1.0, serving) has no positions to name.
        if (m_promptLength > 0) {
            for (const std::string& piece : metadata.promptPieces) {
                appendToken(piece, -1);
            }
        }
    }
    m_fates.update(m_session.timeline());
    readFates();
    readSlice();
}

void TranscriptView::readSlice() {
    // A file-backed step is decoded to read its token (~30 us at 32 layers): a long session is read a slice
    // at a time between the event loop's other work, so that it opens and steps while its text fills in.
    constexpr std::int64_t kSliceSteps = 256;
    constexpr qint64 kSliceNs = 8'000'000;
    QElapsedTimer clock;
    clock.start();
    const std::int64_t steps = m_promptLength > 0 ? m_session.stepCount() : m_stepsRead;
    while (m_stepsRead < steps && clock.nsecsElapsed() < kSliceNs) {
        const std::int64_t to = std::min(steps, m_stepsRead + kSliceSteps);
        for (const ProducedToken& token :
             SessionTokens::producedTokens(m_session.timeline(), m_stepsRead, to, &m_session.speculation())) {
            appendToken(token.text, token.id);
        }
        m_stepsRead = to;
    }
    relayout();
    if (m_stepsRead < steps) {
        m_readTimer->start();
    }
    if (m_followPending && producedPosition() < tokenCount()) {
        // The step shown generates a token read only now: scrolled to as stepping would have.
        m_followPending = false;
        ensureVisible(producedPosition());
    }
    update();
}

bool TranscriptView::readingText() const { return m_promptLength > 0 && m_stepsRead < m_session.stepCount(); }

void TranscriptView::readFates() {
    m_fates.setState(*m_session.state(), m_session.metadata().attentionChunkSizes);
}

float TranscriptView::tokenWidth(const Token& token) {
    QHash<QString, float>& widths = token.special ? m_specialWidths : m_widths;
    if (const auto found = widths.constFind(token.shown); found != widths.constEnd()) {
        return *found;
    }
    const QFontMetricsF metrics(token.special ? specialFont(font()) : font());
    const float width = static_cast<float>(metrics.horizontalAdvance(token.shown)) +
                        (token.special ? kSpecialPadding : kTokenPadding);
    widths.insert(token.shown, width);
    return width;
}

QRect TranscriptView::textArea() const {
    const int top = legendHeight();
    return QRect(kMargin, top, std::max(1, width() - m_scroll->sizeHint().width() - 2 * kMargin),
                 std::max(1, height() - top - kMargin));
}

int TranscriptView::lineHeight() const { return QFontMetrics(font()).height() + 6; }

int TranscriptView::scrollTop() const { return m_scroll->value(); }

void TranscriptView::relayout() {
    const int available = textArea().width();
    if (available != m_linesWidth || m_layoutTokens.size() != m_linesTokens) {
        m_lines = TranscriptLayout::wrap(m_layoutTokens, static_cast<float>(available));
        m_linesWidth = available;
        m_linesTokens = m_layoutTokens.size();
    }
    const int content = static_cast<int>(m_lines.lineCount()) * lineHeight();
    m_scroll->setRange(0, std::max(0, content - textArea().height()));
    m_scroll->setPageStep(textArea().height());
    m_scroll->setSingleStep(lineHeight());
}

void TranscriptView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    const int bar = m_scroll->sizeHint().width();
    m_scroll->setGeometry(width() - bar, legendHeight(), bar, std::max(1, height() - legendHeight()));
    relayout();
}

void TranscriptView::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        // Every width was measured in the old font.
        m_widths.clear();
        m_specialWidths.clear();
        for (std::size_t index = 0; index < m_tokens.size(); ++index) {
            m_layoutTokens[index].width = tokenWidth(m_tokens[index]);
        }
        m_linesWidth = -1;
        relayout();
    }
}

std::int64_t TranscriptView::producedPosition() const {
    return m_session.speculation().producedPosition(m_promptLength, m_session.currentStep());
}

void TranscriptView::ensureVisible(std::int64_t position) {
    if (position < 0 || position >= tokenCount()) {
        return;
    }
    const std::optional<std::size_t> line = TranscriptLayout::lineOf(m_lines, static_cast<std::size_t>(position));
    if (!line) {
        return;
    }
    const int top = static_cast<int>(*line) * lineHeight();
    const int view = textArea().height();
    if (top < scrollTop() || top + lineHeight() > scrollTop() + view) {
        // A third of the way down, so that the text before it reads as context.
        m_scroll->setValue(std::max(0, top - view / 3));
    }
}

TokenFate TranscriptView::fateOf(std::int64_t position) const {
    if (position < 0 || position >= producedPosition()) {
        return TokenFate::Absent;
    }
    const int layer = shownLayer();
    return layer >= 0 ? m_fates.fateAt(layer, position) : m_fates.countsAt(position).shown();
}

bool TranscriptView::someLayersOnly(std::int64_t position) const {
    if (shownLayer() >= 0 || position < 0 || position >= producedPosition()) {
        return false;
    }
    const TokenFateCounts counts = m_fates.countsAt(position);
    return counts.of(counts.shown()) < counts.seen();
}

std::int64_t TranscriptView::positionAt(const QPoint& point) const {
    const QRect area = textArea();
    if (!area.contains(point)) {
        return -1;
    }
    const std::optional<std::size_t> token = TranscriptLayout::tokenAt(
        m_lines, m_layoutTokens, point.x() - area.left(), point.y() - area.top() + scrollTop(), lineHeight());
    return token ? static_cast<std::int64_t>(*token) : -1;
}

QRect TranscriptView::tokenRect(std::int64_t position) const {
    if (position < 0 || position >= tokenCount()) {
        return {};
    }
    const std::optional<std::size_t> line = TranscriptLayout::lineOf(m_lines, static_cast<std::size_t>(position));
    if (!line) {
        return {};
    }
    const QRect area = textArea();
    const QRect box(area.left() + static_cast<int>(m_lines.x[static_cast<std::size_t>(position)]),
                    area.top() + static_cast<int>(*line) * lineHeight() - scrollTop(),
                    static_cast<int>(std::ceil(m_layoutTokens[static_cast<std::size_t>(position)].width)), lineHeight());
    return box.intersects(area) ? box : QRect();
}

QString TranscriptView::describe(std::int64_t position) const {
    if (position < 0 || position >= tokenCount()) {
        return {};
    }
    const Token& token = m_tokens[static_cast<std::size_t>(position)];
    const std::int64_t step = m_session.currentStep();
    const std::int64_t produced = producedPosition();
    QString text = tr("\u201c%1\u201d%2, position %3").arg(token.shown, token.special ? tr(" (special token)") : QString()).arg(position);
    if (position < m_promptLength) {
        text += tr(", in the prompt");
    } else {
        const auto producer = m_session.speculation().producer(m_promptLength, position);
        text += tr(", token id %1, generated at step %2").arg(token.id).arg(producer ? producer->first : -1);
    }
    text += draftLine(position);
    if (position == produced) {
        return text + tr("\nStep %1 generates it: it enters the cache at the next step.").arg(step);
    }
    if (position > produced) {
        return text + tr("\nNot generated yet at step %1.").arg(step);
    }
    const int layer = shownLayer();
    const auto since = [&](int fateLayer, TokenFate fate) {
        const std::optional<std::int64_t> first = m_fates.since(m_session.timeline(), step, fateLayer, position, fate);
        return first ? tr(" since step %1").arg(*first) : QString();
    };
    if (layer >= 0) {
        const TokenFate fate = m_fates.fateAt(layer, position);
        text += tr("\nAt step %1, layer %2: %3").arg(step).arg(layer).arg(PlotStyle::fateName(fate));
        if (fate == TokenFate::Dropped || fate == TokenFate::PartlyDropped ||
            (fate == TokenFate::Masked && m_fates.headsDropping(layer, position).first > 0)) {
            const auto [dropping, heads] = m_fates.headsDropping(layer, position);
            text += tr(" (%1 of %2 KV heads)").arg(dropping).arg(heads);
        }
        return text + since(layer, fate);
    }
    const TokenFateCounts counts = m_fates.countsAt(position);
    text += tr("\nAt step %1, over %2 layers:").arg(step).arg(counts.seen());
    for (auto fate = std::rbegin(kLegendFates); fate != std::rend(kLegendFates); ++fate) {
        if (const std::int32_t layers = counts.of(*fate); layers > 0) {
            const QString name = PlotStyle::fateName(*fate);
            text += QStringLiteral("\n  ") +
                    (layers == 1 ? tr("%1 in 1 layer").arg(name) : tr("%1 in %2 layers").arg(name).arg(layers));
            if (*fate != TokenFate::Kept) {
                text += since(-1, *fate);
            }
        }
    }
    return text;
}

QString TranscriptView::draftLine(std::int64_t position) const {
    const SpeculationHistory::DraftMark mark = m_session.speculation().markAt(m_promptLength, position);
    if (mark.kind == DraftKind::None) {
        return {};
    }
    const trace::SpeculationEvent& event = mark.verification->event;
    if (mark.kind == DraftKind::Accepted) {
        return tr("\nDrafted by %1 at step %2 and accepted: the step wrote it into every layer with its drafts and "
                  "kept it after verifying them.")
            .arg(draftSourceName(event.source))
            .arg(mark.step);
    }
    QStringList rejected;
    for (std::int64_t draft = event.accepted; draft < event.drafted(); ++draft) {
        rejected << QStringLiteral("\u201c%1\u201d").arg(
                        shownText(std::string(event.piece(static_cast<std::size_t>(draft)))));
    }
    const std::int64_t from = event.firstPosition + event.accepted;
    return tr("\nAt step %1 %2 drafted %3 here (positions %4 to %5); the model chose this token instead, and the %n "
              "rejected draft(s) were rolled back from every layer.", nullptr, static_cast<int>(event.drafted() - event.accepted))
        .arg(mark.step)
        .arg(draftSourceName(event.source), rejected.join(QStringLiteral(", ")))
        .arg(from)
        .arg(event.firstPosition + event.drafted() - 1);
}

QString TranscriptView::toolTipAt(const QPoint& point) const { return describe(positionAt(point)); }

std::vector<TranscriptView::LegendEntry> TranscriptView::legendEntries() const {
    std::vector<LegendEntry> entries;
    for (const TokenFate fate : kLegendFates) {
        entries.push_back({legendName(fate), fate, false, {}});
    }
    if (shownLayer() < 0) {
        entries.push_back({tr("lower half: some layers"), TokenFate::Dropped, true, {}});
    }
    if (!m_session.speculation().empty()) {
        entries.push_back({tr("accepted draft"), TokenFate::Kept, false, {}, DraftKind::Accepted});
        entries.push_back({tr("drafts rolled back here"), TokenFate::Kept, false, {}, DraftKind::Replacement});
    }
    // Under the title's line, wrapped to the width.
    const QFontMetrics metrics(font());
    QPointF at(kMargin, 22);
    for (LegendEntry& entry : entries) {
        const double item = 13 + metrics.horizontalAdvance(entry.name) + 10;
        if (at.x() + item > width() - kMargin && at.x() > kMargin) {
            at = QPointF(kMargin, at.y() + kLegendLineHeight);
        }
        entry.at = at;
        at.rx() += item;
    }
    return entries;
}

int TranscriptView::legendHeight() const {
    return static_cast<int>(legendEntries().back().at.y()) + kLegendLineHeight + 2;
}

void TranscriptView::paintLegend(QPainter& painter) {
    m_legend.setFont(font());
    painter.setPen(QColor(60, 60, 70));
    const int layer = shownLayer();
    const QString title =
        m_promptLength == 0 ? tr("Transcript")
        : layer >= 0        ? tr("Transcript, step %1, layer %2").arg(m_session.currentStep()).arg(layer)
                            : tr("Transcript, step %1, over %2 layers").arg(m_session.currentStep()).arg(m_fates.layerCount());
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.drawText(QRect(kMargin, 2, width() - 2 * kMargin, 18), Qt::AlignLeft | Qt::AlignVCenter, title);
    for (const LegendEntry& entry : legendEntries()) {
        const QRectF swatch(entry.at.x(), entry.at.y() + 3, 10, 10);
        if (entry.draft != DraftKind::None) {
            paintDraftMark(painter, swatch, entry.draft);
        } else if (entry.someLayers) {
            painter.fillRect(swatch, PlotStyle::fateColour(TokenFate::Kept));
            painter.fillRect(swatch.adjusted(0, swatch.height() * kPartialTop, 0, 0), QColor(150, 150, 160));
        } else {
            painter.fillRect(swatch, PlotStyle::fateColour(entry.fate));
        }
        painter.setPen(QColor(60, 60, 70));
        m_legend.draw(painter, QRectF(entry.at.x() + 13, entry.at.y(), std::max(1.0, width() - entry.at.x() - 13), 16),
                      Qt::AlignLeft, entry.name);
    }
}

void TranscriptView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    relayout();
    paintLegend(painter);
    const QRect area = textArea();
    if (m_promptLength == 0) {
        painter.setPen(QColor(110, 110, 120));
        painter.drawText(area, Qt::AlignCenter | Qt::TextWordWrap,
                         m_session.mode() == SessionController::Mode::Empty
                             ? tr("No session")
                             : tr("This session records no token texts (format 1.0 or a serving session)"));
        m_painted = {0, 0};
        return;
    }
    m_text.setFont(font());
    m_struck.setFont(struckFont(font()));
    m_specialText.setFont(specialFont(font()));
    const int height = lineHeight();
    const std::int64_t produced = producedPosition();
    const std::int64_t selected = m_selection.selectedPosition();
    const int layer = shownLayer();
    painter.setClipRect(area);
    m_painted = TranscriptLayout::visibleLines(m_lines, scrollTop(), area.height(), height);
    for (std::size_t line = m_painted.first; line < m_painted.second; ++line) {
        const double top = area.top() + static_cast<double>(line) * height - scrollTop();
        const auto [first, end] = m_lines.tokensOf(line);
        for (std::size_t index = first; index < end; ++index) {
            const auto position = static_cast<std::int64_t>(index);
            const Token& token = m_tokens[index];
            const QRectF box(area.left() + m_lines.x[index], top + 1, m_layoutTokens[index].width, height - 2);
            TokenFate fate = TokenFate::Absent;
            bool partial = false;
            if (position < produced) {
                if (layer >= 0) {
                    fate = m_fates.fateAt(layer, position);
                } else {
                    const TokenFateCounts counts = m_fates.countsAt(position);
                    fate = counts.shown();
                    partial = counts.of(fate) < counts.seen();
                }
            }
            if (fate != TokenFate::Absent) {
                QRectF fill = box.adjusted(0.5, 0, -0.5, 0);
                if (partial) {
                    // Some layers only: the fate fills the box's lower part, under the kept colour of the rest.
                    painter.fillRect(fill, PlotStyle::fateColour(TokenFate::Kept));
                    fill.setTop(fill.top() + fill.height() * kPartialTop);
                }
                painter.fillRect(fill, PlotStyle::fateColour(fate));
            }
            // Struck through where no layer holds it any more (the summary's partial fates keep it plain).
            const bool gone = (fate == TokenFate::Dropped || fate == TokenFate::SlidOut) && !partial;
            painter.setPen(position > produced ? QColor(170, 170, 180) : gone ? QColor(90, 80, 80) : QColor(25, 25, 35));
            if (token.special) {
                painter.save();
                painter.setPen(QPen(QColor(120, 120, 140), 1));
                painter.setBrush(Qt::NoBrush);
                painter.drawRoundedRect(box.adjusted(1.5, 2.5, -1.5, -2.5), 3, 3);
                painter.restore();
                m_specialText.draw(painter, box, Qt::AlignHCenter, token.shown);
            } else {
                (gone ? m_struck : m_text).draw(painter, box.adjusted(1, 0, 0, 0), Qt::AlignLeft, token.shown);
            }
            if (position <= produced) {
                paintDraftMark(painter, box, m_session.speculation().markAt(m_promptLength, position).kind);
            }
            if (m_parting >= 0 && position >= m_parting) {
                painter.setPen(QPen(kPartingColour, position == m_parting ? 3 : 1.5));
                painter.drawLine(QPointF(box.left(), box.bottom()), QPointF(box.right(), box.bottom()));
            }
            if (position == produced || position == selected) {
                painter.save();
                painter.setPen(QPen(position == produced ? PlotStyle::cursorColour() : PlotStyle::selectionColour(), 2));
                painter.setBrush(Qt::NoBrush);
                painter.drawRect(box.adjusted(1, 1, -1, -1));
                painter.restore();
            }
        }
    }
}

void TranscriptView::paintDraftMark(QPainter& painter, const QRectF& box, SpeculationHistory::DraftMark::Kind kind) {
    if (kind == DraftKind::Accepted) {
        // Above the compare view's parting line, so that both show.
        painter.setPen(QPen(kAcceptedDraftColour, 2, Qt::DashLine));
        painter.drawLine(QPointF(box.left() + 1, box.bottom() - 2), QPointF(box.right() - 1, box.bottom() - 2));
    } else if (kind == DraftKind::Replacement) {
        painter.fillRect(QRectF(box.left(), box.top(), 3, box.height()), kRolledBackColour);
    }
}

void TranscriptView::mousePressEvent(QMouseEvent* event) {
    const std::int64_t position = positionAt(event->position().toPoint());
    if (position >= 0) {
        m_selection.setSelectedPosition(position);
    }
}

void TranscriptView::mouseMoveEvent(QMouseEvent* event) {
    const QString text = toolTipAt(event->position().toPoint());
    if (text.isEmpty()) {
        QToolTip::hideText();
    } else {
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
    }
}

void TranscriptView::wheelEvent(QWheelEvent* event) {
    // Three lines a notch, as text views scroll.
    m_scroll->setValue(m_scroll->value() - event->angleDelta().y() / 120 * 3 * lineHeight());
    event->accept();
}

} // namespace kvscope::gui
