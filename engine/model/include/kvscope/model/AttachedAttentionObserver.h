// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/LanguageModel.h"

namespace kvscope::model {

class AttentionObserver;

/// Attaches an observer to a model for the lifetime of this object and detaches it however the scope
/// ends, so that a model never calls an observer that is gone.
class AttachedAttentionObserver {
public:
    /// `observer` may be null (nothing observes); both must outlive this object.
    AttachedAttentionObserver(LanguageModel& model, AttentionObserver* observer) : m_model(model) {
        m_model.setAttentionObserver(observer);
    }
    ~AttachedAttentionObserver() { m_model.setAttentionObserver(nullptr); }
    AttachedAttentionObserver(const AttachedAttentionObserver&) = delete;
    AttachedAttentionObserver& operator=(const AttachedAttentionObserver&) = delete;

private:
    LanguageModel& m_model;
};

} // namespace kvscope::model
