// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/ScorerCachePress.h"

namespace kvscope::press {

bool ScorerCachePress::wantsAttentionWeights(int64_t, int64_t passIndex) const {
    return passIndex == 0 && m_scorer->reads().attentions;
}

PressAction ScorerCachePress::onPass(const PressInputs& inputs, const PressPass& pass) {
    PressAction action;
    if (pass.index != 0 || pass.ratio <= 0.0) {
        return action;
    }
    const PressSelection selection = m_scorer->select(inputs, pass.ratio);
    action.kept = selection.keptIndices;
    action.scores = selection.scores;
    return action;
}

} // namespace kvscope::press
