// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/TranscriptLayout.h"
#include "kvscope/gui/models/SpeculationHistory.h"
#include "kvscope/gui/models/TokenFates.h"
#include "kvscope/gui/views/StaticTextCache.h"

#include <QColor>
#include <QHash>
#include <QPointF>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

class QScrollBar;
class QTimer;

class QPainter;
class QRectF;

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// The session as text: the prompt and every generated token, wrapped like prose (a chat turn opens a
/// paragraph, special tokens are boxed), each token coloured by what the cache holds of it at the current
/// step (TokenFates): for the selected layer, or summed over the layers (the most severe fate any layer gave
/// it, filling the lower half of its box where only some layers did). The token the step generates is
/// outlined; tokens after it are faded. Clicking a token selects its position (ViewSelection), hovering names its id, its position and what
/// happened to it since which step. Only the lines in view are painted; the lines are laid out by
/// TranscriptLayout once per width and token count, so a 131072-token session scrolls and steps fluidly; its
/// text is read in slices between the event loop's other work (a file-backed step is decoded to read its token).
/// In compare mode a transcript marks the tokens from where it parts from the other session's. In a speculative-decoding
/// session it underlines the drafts the model accepted and marks where it rejected drafts, which were rolled back.
class TranscriptView : public QWidget {
    Q_OBJECT
public:
    TranscriptView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// Colours by the selected layer (true), or summarises over the layers (false, the default).
    void setFollowLayer(bool follow);
    bool followsLayer() const { return m_followLayer; }
    /// The layer whose fates colour the tokens: the selected one (else the first) when following the
    /// selection, -1 for the summary over the layers.
    int shownLayer() const;
    /// Tokens in the transcript: the prompt's, then one per step read so far.
    std::int64_t tokenCount() const { return static_cast<std::int64_t>(m_tokens.size()); }
    /// Whether steps' tokens remain to be read: a long file-backed session's text fills in over the event loop's
    /// turns (a few milliseconds each), so that it opens and steps at once.
    bool readingText() const;
    /// The token position under a widget point; -1 where there is none.
    std::int64_t positionAt(const QPoint& point) const;
    /// A token's box in widget coordinates; empty while it is scrolled out of view.
    QRect tokenRect(std::int64_t position) const;
    /// The fate a token is coloured by at the current step (Absent for the token being generated and later
    /// ones), and whether it is the fate of some of the layers only (summary).
    TokenFate fateOf(std::int64_t position) const;
    bool someLayersOnly(std::int64_t position) const;
    /// What hovering a token says: its text, id and position, then what the cache holds of it and since when.
    QString describe(std::int64_t position) const;
    QString toolTipAt(const QPoint& point) const;
    /// Marks the tokens from `position` on as where this transcript parts from another session's; -1: none.
    void setPartingPosition(std::int64_t position);
    std::int64_t partingPosition() const { return m_parting; }
    /// The lines of the layout at the current width (blank lines between turns included).
    std::size_t lineCount() const { return m_lines.lineCount(); }
    /// The lines painted by the last paint: those in view.
    std::pair<std::size_t, std::size_t> paintedLines() const { return m_painted; }
    QScrollBar* scrollBar() const { return m_scroll; }
    /// Scrolls so that a position's line is in view (unchanged when it already is).
    void ensureVisible(std::int64_t position);
    QSize sizeHint() const override { return {380, 480}; }
    QSize minimumSizeHint() const override { return {180, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    /// One token as read from the session.
    struct Token {
        QString shown; ///< its text as drawn (newline as ↵, bytes that are not text as ·)
        std::int64_t id = -1; ///< -1 for prompt tokens (sessions record their pieces only)
        bool special = false;
    };
    /// Reads the session's tokens: the prompt's for a new session, then the steps' in slices (readSlice).
    void readTokens(bool newSession);
    /// Reads the next steps' tokens for a few milliseconds, and schedules the next slice while steps remain.
    void readSlice();
    void appendToken(const std::string& piece, std::int64_t id);
    /// The step's fates (the current state and the press decisions read so far).
    void readFates();
    /// Lays the tokens out again when the width or the token count changed.
    void relayout();
    float tokenWidth(const Token& token);
    /// A swatch of the legend and where it goes: a fate's, or the summary's half-filled one (some layers only).
    struct LegendEntry {
        QString name;
        TokenFate fate = TokenFate::Kept;
        bool someLayers = false;
        QPointF at;
        /// A speculative session's mark (accepted drafts, rolled-back drafts) instead of a fate's swatch.
        SpeculationHistory::DraftMark::Kind draft = SpeculationHistory::DraftMark::Kind::None;
    };
    /// The tooltip's line on speculative decoding: the position was an accepted draft, or the model's token where
    /// it rejected drafts (named, with the positions rolled back); empty otherwise.
    QString draftLine(std::int64_t position) const;
    /// An accepted draft's underline or a rolled-back draft's bar, in `box`.
    static void paintDraftMark(QPainter& painter, const QRectF& box, SpeculationHistory::DraftMark::Kind kind);
    /// The legend's swatches laid out under the title, wrapped to the width.
    std::vector<LegendEntry> legendEntries() const;
    /// The title and the legend's lines.
    int legendHeight() const;
    QRect textArea() const;
    int lineHeight() const;
    int scrollTop() const;
    /// The position the current step generates: the prompt's length plus the step.
    std::int64_t producedPosition() const;
    void paintLegend(QPainter& painter);

    SessionController& m_session;
    ViewSelection& m_selection;
    QScrollBar* m_scroll;
    QTimer* m_readTimer;
    TokenFates m_fates;
    bool m_followLayer = false;
    std::int64_t m_parting = -1;
    std::int64_t m_promptLength = 0;
    std::int64_t m_stepsRead = 0;
    /// The step shown generates a token not read yet: scrolled to once it is.
    bool m_followPending = false;
    std::vector<Token> m_tokens;
    std::vector<TranscriptToken> m_layoutTokens;
    TranscriptLines m_lines;
    /// What m_lines was laid out for.
    int m_linesWidth = -1;
    std::size_t m_linesTokens = 0;
    std::pair<std::size_t, std::size_t> m_painted{0, 0};
    /// Token widths by shown text, in the text font and the special tokens' font.
    QHash<QString, float> m_widths;
    QHash<QString, float> m_specialWidths;
    StaticTextCache m_text;
    StaticTextCache m_struck;
    StaticTextCache m_specialText;
    StaticTextCache m_legend;
};

} // namespace kvscope::gui
