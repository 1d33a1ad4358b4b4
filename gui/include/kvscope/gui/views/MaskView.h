// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/MaskGeometry.h"
#include "kvscope/gui/models/PressHistory.h"

#include <QStringList>
#include <QWidget>

#include <cstdint>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// The selected layer's attention mask at the current step: query rows x key columns, the columns
/// labelled with absolute positions from kv_offset. Full layers are causal, sliding layers add the
/// window, chunked layers (the config's "chunked_attention") the chunk; the kind comes from the layer
/// and the session's model config. The selected token position's key column is outlined while the layer holds it.
class MaskView : public QWidget {
    Q_OBJECT
public:
    MaskView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// The mask drawn for `layer` at the current step.
    MaskShape shapeOf(int layer) const;
    /// What a masking press (AdaKV) adds to `layer`'s mask per KV head at the current step, in words; empty
    /// when no such press decided on it (the drawn mask is then the whole truth).
    QString headMaskNote(int layer) const;
    QSize sizeHint() const override { return {360, 260}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    int shownLayer() const;

    SessionController& m_session;
    ViewSelection& m_selection;
    /// The session's compressions, read as it grows.
    mutable PressHistory m_history;
};

} // namespace kvscope::gui
