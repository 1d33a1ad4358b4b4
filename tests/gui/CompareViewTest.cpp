// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/CompareView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <cmath>

namespace kvscope::gui {
namespace {

// A session whose steps produce the given tokens, each with a two-token distribution.
std::vector<trace::Event> tokens(const std::vector<std::int64_t>& produced, double confidence) {
    std::vector<trace::Event> events;
    for (std::size_t step = 0; step < produced.size(); ++step) {
        const auto s = static_cast<std::int64_t>(step);
        events.push_back({s, -1, 0, trace::StepBeginEvent{}});
        events.push_back({s, 0, 0, trace::UpdateEvent{1, s + 1, s + 1, -1, s + 1, 64}});
        trace::LogitsEvent logits;
        logits.tokenIds = {produced[step], 999};
        logits.logProbs = {static_cast<float>(std::log(confidence)), static_cast<float>(std::log(1 - confidence))};
        logits.complete = false;
        events.push_back({s, -1, 0, logits});
        events.push_back({s, -1, 0, trace::StepEndEvent{produced[step], std::string(1, char('a' + produced[step] % 26)), 1}});
    }
    return events;
}

TEST(CompareViewTest, MarksTheFirstDivergenceAndKeepsStepsInSync) {
    SessionController a;
    SessionController b;
    ViewSelection selection;
    CompareView view(a, b, selection);
    view.resize(900, 500);
    EXPECT_EQ(view.firstDivergentStep(), -1);
    a.setRecordedSession({}, tokens({1, 2, 3, 4, 5}, 0.9), "A");
    b.setRecordedSession({}, tokens({1, 2, 7, 4, 5}, 0.6), "B");
    EXPECT_EQ(view.comparison().size(), 5u);
    EXPECT_EQ(view.firstDivergentStep(), 2);
    EXPECT_GT(view.comparison()[0].klDivergence, 0.0) << "same top token, different confidence";
    EXPECT_TRUE(view.comparison()[0].top1Agrees);
    EXPECT_FALSE(view.comparison()[2].top1Agrees);
    a.setCurrentStep(3);
    EXPECT_EQ(b.currentStep(), 3);
}

} // namespace
} // namespace kvscope::gui
