// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/LogitsComparison.h"

#include <QWidget>

#include <cstdint>
#include <vector>

class QCPItemStraightLine;
class QCPItemText;
class QLabel;

namespace kvscope::gui {

class CursorPlot;
class SessionController;
class ViewSelection;

/// Compare mode: two sessions on the same prompt side by side (their occupancy maps), steps in sync
/// (B follows A's step), both texts as words (the prompt, then the generated tokens' pieces joined) with
/// the first divergent token marked and its step named, and per step the KL divergence KL(A || B) and
/// top-1 agreement of their next-token distributions (Logits events).
class CompareView : public QWidget {
    Q_OBJECT
public:
    CompareView(SessionController& a, SessionController& b, ViewSelection& selection, QWidget* parent = nullptr);

    const std::vector<StepComparison>& comparison() const { return m_comparison; }
    std::int64_t firstDivergentStep() const { return m_firstDivergence; }
    /// The two texts as shown (rich text): A's line, then B's.
    QString texts() const;
    /// The header (rich text): what A and B are (model, cache, press), the first divergence, top-1 agreement.
    QString header() const;

private:
    void recompute();
    void moveCursor();
    QString wordsOf(const SessionController& session) const;

    SessionController& m_a;
    SessionController& m_b;
    QLabel* m_header;
    QLabel* m_texts;
    CursorPlot* m_plot;
    QCPItemStraightLine* m_divergence;
    QCPItemText* m_message;
    std::vector<StepComparison> m_comparison;
    std::int64_t m_firstDivergence = -1;
};

} // namespace kvscope::gui
