// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFont>
#include <QHash>
#include <QStaticText>

#include <utility>

class QPainter;
class QRectF;

namespace kvscope::gui {

/// One-line texts laid out once per font and kept across paints: QPainter::drawText shapes its string
/// on every call, which was most of the cost of repainting tables and maps of many short labels.
class StaticTextCache {
public:
    /// Distinct texts kept before the cache starts over (a 32-layer table shows a few hundred).
    explicit StaticTextCache(qsizetype capacity = 4096);

    /// Texts laid out for another font are dropped.
    void setFont(const QFont& font);
    const QFont& font() const { return m_font; }

    const QStaticText& laidOut(const QString& text);
    /// Width of the text in this font, in pixels.
    double width(const QString& text) { return laidOut(text).size().width(); }

    /// Draws one line in `rect` with the painter's pen and this cache's font: horizontally left, right
    /// or centred, vertically centred unless Qt::AlignTop; elided with "…" when wider than the rect.
    void draw(QPainter& painter, const QRectF& rect, Qt::Alignment alignment, const QString& text);

private:
    qsizetype m_capacity;
    QFont m_font;
    QHash<QString, QStaticText> m_texts;
    /// Elided forms by (text, pixel width): long texts in narrow columns (the event log's "why").
    QHash<std::pair<QString, int>, QString> m_elided;
};

} // namespace kvscope::gui
