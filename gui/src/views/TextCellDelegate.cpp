// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/TextCellDelegate.h"

#include <QApplication>
#include <QPainter>
#include <QStyle>

#include <cmath>

namespace kvscope::gui {
namespace {

constexpr int kTextMargin = 4;

} // namespace

TextCellDelegate::TextCellDelegate(int boldRole, QObject* parent) : QStyledItemDelegate(parent), m_boldRole(boldRole) {}

void TextCellDelegate::useFont(const QFont& font) const {
    if (!m_fontsSet || m_regular.font() != font) {
        m_fontsSet = true;
        QFont bold = font;
        bold.setBold(true);
        m_regular.setFont(font);
        m_bold.setFont(bold);
    }
}

QSize TextCellDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    useFont(option.font);
    const double width = m_bold.width(index.data(Qt::DisplayRole).toString());
    return {static_cast<int>(std::ceil(width)) + 2 * kTextMargin + 2, QFontMetrics(m_bold.font()).height() + 4};
}

void TextCellDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    const QPalette::ColorGroup group = !(option.state & QStyle::State_Enabled) ? QPalette::Disabled
                                       : (option.state & QStyle::State_Active) ? QPalette::Active
                                                                                : QPalette::Inactive;
    const bool selected = option.state & QStyle::State_Selected;
    if (selected) {
        painter->fillRect(option.rect, option.palette.brush(group, QPalette::Highlight));
    }
    useFont(option.font);
    StaticTextCache& texts = m_boldRole >= 0 && index.data(m_boldRole).toBool() ? m_bold : m_regular;
    painter->setPen(option.palette.color(group, selected ? QPalette::HighlightedText : QPalette::Text));
    texts.draw(*painter, option.rect.adjusted(kTextMargin, 0, -kTextMargin, 0),
               Qt::Alignment(index.data(Qt::TextAlignmentRole).toInt()), index.data(Qt::DisplayRole).toString());
    if (option.state & QStyle::State_HasFocus) {
        QStyleOptionFocusRect focus;
        focus.QStyleOption::operator=(option);
        focus.backgroundColor = option.palette.color(group, selected ? QPalette::Highlight : QPalette::Window);
        const QWidget* widget = option.widget;
        QStyle* style = widget ? widget->style() : QApplication::style();
        style->drawPrimitive(QStyle::PE_FrameFocusRect, &focus, painter, widget);
    }
}

} // namespace kvscope::gui
