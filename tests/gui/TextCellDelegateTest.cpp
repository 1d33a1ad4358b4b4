// SPDX-License-Identifier: GPL-3.0-or-later
// TextCellDelegate and StaticTextCache: direct cell painting of the layer table and the event log.

#include "GuiTestHelpers.h"
#include "kvscope/gui/models/LayerTableModel.h"
#include "kvscope/gui/views/StaticTextCache.h"
#include "kvscope/gui/views/TextCellDelegate.h"

#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QStyleOptionViewItem>

namespace kvscope::gui {
namespace {

const QColor kPaper(255, 255, 255);

// Pixels darker than the paper inside `area`, and the columns of the leftmost and rightmost ones.
struct Ink {
    int pixels = 0;
    int left = -1;
    int right = -1;
};

Ink inkIn(const QImage& image, const QRect& area) {
    Ink ink;
    for (int y = area.top(); y <= area.bottom(); ++y) {
        for (int x = area.left(); x <= area.right(); ++x) {
            if (qGray(image.pixel(x, y)) < 160) {
                ++ink.pixels;
                ink.left = ink.left < 0 ? x : std::min(ink.left, x);
                ink.right = std::max(ink.right, x);
            }
        }
    }
    return ink;
}

QStyleOptionViewItem cellOption(const QRect& rect) {
    QStyleOptionViewItem option;
    option.rect = rect;
    option.font = QApplication::font();
    option.palette = QApplication::palette();
    option.state = QStyle::State_Enabled | QStyle::State_Active;
    return option;
}

// Paints one cell on white, the cell at (20, 10) of a 300 x 40 image.
QImage paintCell(const TextCellDelegate& delegate, const QModelIndex& index, QStyleOptionViewItem option) {
    QImage image(300, 40, QImage::Format_ARGB32_Premultiplied);
    image.fill(kPaper);
    QPainter painter(&image);
    delegate.paint(&painter, option, index);
    return image;
}

class TextCellDelegateTest : public ::testing::Test {
protected:
    void SetUp() override { synthetic::SyntheticSession::generate(testing::smallSession(20), m_timeline); }

    trace::Timeline m_timeline;
    LayerTableModel m_model;
    TextCellDelegate m_delegate{LayerTableModel::ChangedRole};
};

TEST_F(TextCellDelegateTest, ChangedCellsAreBold) {
    // The same snapshot twice: nothing changed; then step 4 after step 3: the sequence length grew.
    m_model.setState(m_timeline.snapshotAt(4));
    m_model.setState(m_timeline.snapshotAt(4));
    const QModelIndex seqLength = m_model.index(0, LayerTableModel::SeqLength);
    ASSERT_FALSE(seqLength.data(LayerTableModel::ChangedRole).toBool());
    const QRect cell(20, 10, 120, 20);
    const Ink regular = inkIn(paintCell(m_delegate, seqLength, cellOption(cell)), cell);
    m_model.setState(m_timeline.snapshotAt(3));
    m_model.setState(m_timeline.snapshotAt(4));
    ASSERT_TRUE(seqLength.data(LayerTableModel::ChangedRole).toBool());
    const Ink bold = inkIn(paintCell(m_delegate, seqLength, cellOption(cell)), cell);
    EXPECT_GT(regular.pixels, 0);
    EXPECT_GT(bold.pixels, regular.pixels * 11 / 10) << "the same digits, bold, carry more ink";
}

TEST_F(TextCellDelegateTest, WithoutABoldRoleNothingIsBold) {
    // The event log's delegate: the same changed cell as above, painted regular.
    m_model.setState(m_timeline.snapshotAt(4));
    m_model.setState(m_timeline.snapshotAt(4));
    const QModelIndex seqLength = m_model.index(0, LayerTableModel::SeqLength);
    const QRect cell(20, 10, 120, 20);
    const Ink regular = inkIn(paintCell(m_delegate, seqLength, cellOption(cell)), cell);
    m_model.setState(m_timeline.snapshotAt(3));
    m_model.setState(m_timeline.snapshotAt(4));
    const TextCellDelegate plain(-1);
    EXPECT_EQ(inkIn(paintCell(plain, seqLength, cellOption(cell)), cell).pixels, regular.pixels);
}

TEST_F(TextCellDelegateTest, NumbersAlignRightAndNamesLeft) {
    m_model.setState(m_timeline.snapshotAt(4));
    const QRect cell(20, 10, 200, 20);
    const Ink number = inkIn(paintCell(m_delegate, m_model.index(0, LayerTableModel::SeqLength), cellOption(cell)), cell);
    const Ink name = inkIn(paintCell(m_delegate, m_model.index(0, LayerTableModel::Type), cellOption(cell)), cell);
    EXPECT_GE(number.right, cell.right() - 8);
    EXPECT_GT(number.left, cell.center().x());
    EXPECT_LE(name.left, cell.left() + 8);
    EXPECT_LT(name.right, cell.right() - 40);
}

TEST_F(TextCellDelegateTest, SelectedCellsTakeTheHighlight) {
    m_model.setState(m_timeline.snapshotAt(4));
    QStyleOptionViewItem option = cellOption(QRect(20, 10, 120, 20));
    option.state |= QStyle::State_Selected;
    const QImage image = paintCell(m_delegate, m_model.index(0, LayerTableModel::SeqLength), option);
    EXPECT_EQ(QColor(image.pixel(22, 12)), QApplication::palette().color(QPalette::Active, QPalette::Highlight));
    EXPECT_EQ(QColor(image.pixel(5, 5)), kPaper) << "nothing outside the cell";
}

TEST_F(TextCellDelegateTest, ANarrowColumnElidesInsideTheCell) {
    m_model.setState(m_timeline.snapshotAt(4));
    const QRect cell(20, 10, 30, 20);
    const QImage image = paintCell(m_delegate, m_model.index(0, LayerTableModel::Stored), cellOption(cell));
    EXPECT_GT(inkIn(image, cell).pixels, 0);
    EXPECT_EQ(inkIn(image, QRect(0, 0, 20, 40)).pixels, 0);
    EXPECT_EQ(inkIn(image, QRect(cell.right() + 1, 0, 300 - cell.right() - 1, 40)).pixels, 0);
}

TEST_F(TextCellDelegateTest, ColumnsFitTheBoldText) {
    // Past the 24-token window: it slides every step.
    m_model.setState(m_timeline.snapshotAt(16));
    const QModelIndex window = m_model.index(1, LayerTableModel::Window);
    const QString text = window.data().toString();
    ASSERT_TRUE(text.startsWith('[')) << "layer 1 is sliding";
    QFont bold = QApplication::font();
    bold.setBold(true);
    const QSize hint = m_delegate.sizeHint(cellOption(QRect(0, 0, 10, 20)), window);
    EXPECT_GE(hint.width(), QFontMetrics(bold).horizontalAdvance(text) + 8);
    // A cell of exactly that width shows the whole bold text: as much ink as in a wide cell.
    m_model.setState(m_timeline.snapshotAt(15));
    m_model.setState(m_timeline.snapshotAt(16));
    ASSERT_TRUE(window.data(LayerTableModel::ChangedRole).toBool());
    const QRect fitted(20, 10, hint.width(), 20);
    const QRect wide(20, 10, 270, 20);
    EXPECT_EQ(inkIn(paintCell(m_delegate, window, cellOption(fitted)), fitted).pixels,
              inkIn(paintCell(m_delegate, window, cellOption(wide)), wide).pixels);
}

TEST(StaticTextCacheTest, LaysOutEachTextOncePerFont) {
    StaticTextCache cache(3);
    QFont font = QApplication::font();
    cache.setFont(font);
    const QStaticText* first = &cache.laidOut(QStringLiteral("1024"));
    EXPECT_EQ(&cache.laidOut(QStringLiteral("1024")), first) << "a second paint reuses the layout";
    const double regular = cache.width(QStringLiteral("1024"));
    font.setBold(true);
    cache.setFont(font);
    EXPECT_GT(cache.width(QStringLiteral("1024")), regular) << "texts of the old font were dropped";
    // Over capacity the cache starts over rather than grow without bound.
    for (const char* text : {"a", "b", "c", "d"}) {
        cache.laidOut(QString::fromLatin1(text));
    }
    EXPECT_GT(cache.width(QStringLiteral("d")), 0.0);
}

TEST(StaticTextCacheTest, DrawsAlignedAndCentred) {
    StaticTextCache cache;
    cache.setFont(QApplication::font());
    QImage image(300, 40, QImage::Format_ARGB32_Premultiplied);
    const QRect area(10, 5, 280, 30);
    const auto inkOf = [&](Qt::Alignment alignment) {
        image.fill(kPaper);
        QPainter painter(&image);
        painter.setPen(Qt::black);
        cache.draw(painter, area, alignment, QStringLiteral("kv_offset"));
        painter.end();
        return inkIn(image, image.rect());
    };
    const Ink left = inkOf(Qt::AlignLeft);
    const Ink right = inkOf(Qt::AlignRight);
    const Ink centre = inkOf(Qt::AlignHCenter);
    EXPECT_LE(left.left, area.left() + 2);
    EXPECT_GE(right.right, area.right() - 2);
    EXPECT_NEAR((centre.left + centre.right) / 2.0, area.center().x(), 3.0);
    EXPECT_EQ(right.right - right.left, left.right - left.left) << "the same laid-out text";
}

} // namespace
} // namespace kvscope::gui
