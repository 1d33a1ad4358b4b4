// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/CachePress.h"
#include "kvscope/press/Press.h"

#include <memory>

namespace kvscope::press {

/// A scorer press in a generation, as kvpress's ScorerPress hook applies it: after each layer's prefill,
/// keep the `ratio` share's best tokens per KV head; decoding passes are left alone.
class ScorerCachePress : public CachePress {
public:
    explicit ScorerCachePress(std::shared_ptr<const Press> scorer) : m_scorer(std::move(scorer)) {}
    bool wantsAttentionWeights(int64_t layer, int64_t passIndex) const override;
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override;

private:
    std::shared_ptr<const Press> m_scorer;
};

} // namespace kvscope::press
