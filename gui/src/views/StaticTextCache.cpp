// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/StaticTextCache.h"

#include <QFontMetricsF>
#include <QPainter>

namespace kvscope::gui {

StaticTextCache::StaticTextCache(qsizetype capacity) : m_capacity(capacity) {}

void StaticTextCache::setFont(const QFont& font) {
    if (font != m_font) {
        m_font = font;
        m_texts.clear();
        m_elided.clear();
    }
}

const QStaticText& StaticTextCache::laidOut(const QString& text) {
    if (const auto found = m_texts.constFind(text); found != m_texts.constEnd()) {
        return *found;
    }
    if (m_texts.size() >= m_capacity) {
        m_texts.clear();
    }
    QStaticText laid(text);
    laid.setTextFormat(Qt::PlainText);
    laid.prepare(QTransform(), m_font);
    return *m_texts.insert(text, laid);
}

void StaticTextCache::draw(QPainter& painter, const QRectF& rect, Qt::Alignment alignment, const QString& text) {
    if (text.isEmpty()) {
        return;
    }
    painter.setFont(m_font);
    const QStaticText* laid = &laidOut(text);
    if (laid->size().width() > rect.width()) {
        const std::pair<QString, int> key{text, static_cast<int>(rect.width())};
        auto elided = m_elided.constFind(key);
        if (elided == m_elided.constEnd()) {
            if (m_elided.size() >= m_capacity) {
                m_elided.clear();
            }
            elided = m_elided.insert(key, QFontMetricsF(m_font).elidedText(text, Qt::ElideRight, key.second));
        }
        laid = &laidOut(*elided);
    }
    const QSizeF size = laid->size();
    double x = rect.left();
    if (alignment & Qt::AlignRight) {
        x = rect.right() - size.width();
    } else if (alignment & Qt::AlignHCenter) {
        x = rect.left() + (rect.width() - size.width()) / 2.0;
    }
    const double y = (alignment & Qt::AlignTop) ? rect.top() : rect.top() + (rect.height() - size.height()) / 2.0;
    painter.drawStaticText(QPointF(x, y), *laid);
}

} // namespace kvscope::gui
