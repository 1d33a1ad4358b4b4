// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// Two sessions' outputs at one step.
struct StepComparison {
    std::int64_t step = 0;
    std::int64_t tokenA = -1; ///< the token each session produced (StepEnd), -1 when unknown
    std::int64_t tokenB = -1;
    bool hasLogits = false; ///< both sessions recorded the step's Logits
    double klDivergence = 0.0; ///< KL(A || B) in nats
    bool top1Agrees = false;
    bool operator==(const StepComparison&) const = default;
};

/// Compares next-token distributions of two sessions on the same prompt (compare mode).
class LogitsComparison {
public:
    /// KL(p || q) over p's tokens, matched by id (a complete distribution is indexed by id, a top-k list
    /// names its ids). Exact when both are complete; for top-k lists a token
    /// missing from q takes q's smallest listed log-probability (an upper bound of any unlisted one),
    /// and p's unlisted mass is left out: an estimate that is 0 for equal distributions.
    static double klDivergence(const trace::LogitsEvent& p, const trace::LogitsEvent& q);
    /// Whether both distributions put their highest log-probability on the same token.
    static bool top1Agrees(const trace::LogitsEvent& p, const trace::LogitsEvent& q);
    /// One entry per step both timelines have.
    static std::vector<StepComparison> compare(const trace::Timeline& a, const trace::Timeline& b);
    /// The first step whose produced tokens differ; -1 when none does.
    static std::int64_t firstDivergentStep(const std::vector<StepComparison>& steps);
};

} // namespace kvscope::gui
