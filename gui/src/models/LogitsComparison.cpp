// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/LogitsComparison.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace kvscope::gui {
namespace {

// A complete distribution is indexed by token id; a top-k list names its ids in tokenIds.
std::size_t entryCount(const trace::LogitsEvent& logits) {
    return logits.complete ? logits.logProbs.size() : std::min(logits.logProbs.size(), logits.tokenIds.size());
}

std::int64_t tokenOf(const trace::LogitsEvent& logits, std::size_t entry) {
    return logits.complete ? static_cast<std::int64_t>(entry) : logits.tokenIds[entry];
}

std::int64_t argmax(const trace::LogitsEvent& logits) {
    const std::size_t count = entryCount(logits);
    if (count == 0) {
        return -1;
    }
    const auto best = std::max_element(logits.logProbs.begin(), logits.logProbs.begin() + static_cast<std::ptrdiff_t>(count));
    return tokenOf(logits, static_cast<std::size_t>(best - logits.logProbs.begin()));
}

struct StepOutputs {
    const trace::LogitsEvent* logits = nullptr;
    std::int64_t token = -1;
};

StepOutputs outputsOf(const trace::Timeline& timeline, std::int64_t step) {
    StepOutputs outputs;
    for (const trace::Event& event : timeline.eventsOfStep(step)) {
        if (const auto* logits = std::get_if<trace::LogitsEvent>(&event.payload)) {
            outputs.logits = logits;
        } else if (const auto* end = std::get_if<trace::StepEndEvent>(&event.payload)) {
            outputs.token = end->tokenId;
        }
    }
    return outputs;
}

} // namespace

double LogitsComparison::klDivergence(const trace::LogitsEvent& p, const trace::LogitsEvent& q) {
    const std::size_t pCount = entryCount(p);
    const std::size_t qCount = entryCount(q);
    if (pCount == 0 || qCount == 0) {
        return 0.0;
    }
    std::unordered_map<std::int64_t, float> qByToken;
    qByToken.reserve(qCount);
    for (std::size_t index = 0; index < qCount; ++index) {
        qByToken.emplace(tokenOf(q, index), q.logProbs[index]);
    }
    const float qFloor = *std::min_element(q.logProbs.begin(), q.logProbs.begin() + static_cast<std::ptrdiff_t>(qCount));
    double divergence = 0.0;
    for (std::size_t index = 0; index < pCount; ++index) {
        const double logP = p.logProbs[index];
        const auto found = qByToken.find(tokenOf(p, index));
        const double logQ = found != qByToken.end() ? found->second : qFloor;
        divergence += std::exp(logP) * (logP - logQ);
    }
    return std::max(0.0, divergence);
}

bool LogitsComparison::top1Agrees(const trace::LogitsEvent& p, const trace::LogitsEvent& q) {
    const std::int64_t tokenP = argmax(p);
    return tokenP >= 0 && tokenP == argmax(q);
}

std::vector<StepComparison> LogitsComparison::compare(const trace::Timeline& a, const trace::Timeline& b) {
    const std::int64_t steps = std::min(a.stepCount(), b.stepCount());
    std::vector<StepComparison> result;
    result.reserve(static_cast<std::size_t>(std::max<std::int64_t>(steps, 0)));
    for (std::int64_t step = 0; step < steps; ++step) {
        const StepOutputs outputsA = outputsOf(a, step);
        const StepOutputs outputsB = outputsOf(b, step);
        StepComparison comparison;
        comparison.step = step;
        comparison.tokenA = outputsA.token;
        comparison.tokenB = outputsB.token;
        if (outputsA.logits && outputsB.logits) {
            comparison.hasLogits = true;
            comparison.klDivergence = klDivergence(*outputsA.logits, *outputsB.logits);
            comparison.top1Agrees = top1Agrees(*outputsA.logits, *outputsB.logits);
        }
        result.push_back(comparison);
    }
    return result;
}

std::int64_t LogitsComparison::firstDivergentStep(const std::vector<StepComparison>& steps) {
    for (const StepComparison& step : steps) {
        if (step.tokenA != step.tokenB) {
            return step.step;
        }
    }
    return -1;
}

} // namespace kvscope::gui
