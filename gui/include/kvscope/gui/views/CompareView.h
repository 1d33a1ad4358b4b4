// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/LogitsComparison.h"
#include "kvscope/gui/models/ServingSummary.h"

#include <QWidget>
#include <cstdint>
#include <vector>

class QCPItemStraightLine;
class QCPItemText;
class QLabel;
class QStackedWidget;
class QTableWidget;

namespace kvscope::gui {

class CursorPlot;
class SessionController;
class TranscriptView;
class ViewSelection;

/// Compare mode: two sessions on the same prompt side by side (their occupancy maps), steps in sync
/// (B follows A's step), both transcripts side by side (TranscriptView) with the tokens from the first
/// divergent one on underlined, and per step the KL divergence KL(A || B) and
/// top-1 agreement of their next-token distributions (Logits events). Two serving sessions (the same
/// workload with another pool or without prefix caching) are compared by their numbers instead: steps to
/// finish, prefix hit rate, preemptions, evictions, peak pool usage side by side (ServingSummary), with
/// both block pools at the step.
class CompareView : public QWidget {
    Q_OBJECT
public:
    CompareView(SessionController& a, SessionController& b, ViewSelection& selection, QWidget* parent = nullptr);

    const std::vector<StepComparison>& comparison() const { return m_comparison; }
    std::int64_t firstDivergentStep() const { return m_firstDivergence; }
    /// The two transcripts, A's and B's.
    TranscriptView* transcriptA() const { return m_transcriptA; }
    TranscriptView* transcriptB() const { return m_transcriptB; }
    /// The header (rich text): what A and B are (model, cache, press), the first divergence, top-1 agreement.
    QString header() const;
    /// Whether the serving comparison is the one shown (A is a serving session).
    bool showsServing() const;
    /// The serving numbers of A and B over their whole sessions (so far, while B still runs).
    const ServingSummary& servingA() const { return m_servingA; }
    const ServingSummary& servingB() const { return m_servingB; }
    /// The serving numbers' table: a row per number, columns A, B and B - A.
    QTableWidget* servingTable() const { return m_servingTable; }

private:
    void recompute();
    void moveCursor();
    void recomputeServing();
    void updateStepRow();

    SessionController& m_a;
    SessionController& m_b;
    QLabel* m_header;
    TranscriptView* m_transcriptA = nullptr;
    TranscriptView* m_transcriptB = nullptr;
    CursorPlot* m_plot;
    QCPItemStraightLine* m_divergence;
    QCPItemText* m_message;
    std::vector<StepComparison> m_comparison;
    std::int64_t m_firstDivergence = -1;
    QStackedWidget* m_pages;
    QTableWidget* m_servingTable;
    ServingSummary m_servingA;
    ServingSummary m_servingB;
};

} // namespace kvscope::gui
