// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/CompareView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/TranscriptView.h"

#include <cmath>
#include <string>
#include <utility>

namespace kvscope::gui {
namespace {

// A session whose steps produce the given tokens (id, piece) after `promptLength` prompt tokens, each
// with a two-token distribution.
std::vector<trace::Event> produce(const std::vector<std::pair<std::int64_t, std::string>>& produced,
                                  double confidence = 0.9, std::int64_t promptLength = 0) {
    std::vector<trace::Event> events;
    for (std::size_t step = 0; step < produced.size(); ++step) {
        const auto s = static_cast<std::int64_t>(step);
        const std::int64_t seq = promptLength + s + 1;
        events.push_back({s, -1, 0, trace::StepBeginEvent{}});
        events.push_back({s, 0, 0, trace::UpdateEvent{1, seq, seq, -1, seq, 64}});
        trace::LogitsEvent logits;
        logits.tokenIds = {produced[step].first, 999};
        logits.logProbs = {static_cast<float>(std::log(confidence)), static_cast<float>(std::log(1 - confidence))};
        logits.complete = false;
        events.push_back({s, -1, 0, logits});
        events.push_back({s, -1, 0, trace::StepEndEvent{produced[step].first, produced[step].second, 1}});
    }
    return events;
}

// Tokens named by a letter each.
std::vector<trace::Event> tokens(const std::vector<std::int64_t>& ids, double confidence) {
    std::vector<std::pair<std::int64_t, std::string>> produced;
    for (const std::int64_t id : ids) {
        produced.emplace_back(id, std::string(1, static_cast<char>('a' + id % 26)));
    }
    return produce(produced, confidence);
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

TEST(CompareViewTest, ShowsBothTranscriptsMarkedFromWhereTheyPart) {
    SessionController a;
    SessionController b;
    ViewSelection selection;
    CompareView view(a, b, selection);
    trace::SessionMetadata metadata;
    metadata.prompt = "The key-value";
    metadata.promptPieces = {"<bos>", "The", " key", "-value"};
    a.setRecordedSession(metadata, produce({{1, " cache"}, {2, " holds"}, {3, " past"}, {4, " keys"}}, 0.9, 4), "A");
    b.setRecordedSession(metadata, produce({{1, " cache"}, {2, " holds"}, {5, " <new>"}, {6, " keys\n"}}, 0.9, 4),
                         "B");
    ASSERT_EQ(view.firstDivergentStep(), 2);
    // Each transcript holds its session's prompt and what it generated, marked from step 2's token on.
    for (TranscriptView* transcript : {view.transcriptA(), view.transcriptB()}) {
        EXPECT_EQ(transcript->tokenCount(), 8);
        EXPECT_EQ(transcript->partingPosition(), 6) << "the prompt's 4 tokens, then steps 0 and 1";
    }
    EXPECT_TRUE(view.transcriptA()->describe(6).startsWith(QStringLiteral("\u201c past\u201d, position 6")))
        << view.transcriptA()->describe(6).toStdString();
    EXPECT_TRUE(view.transcriptB()->describe(6).startsWith(QStringLiteral("\u201c <new>\u201d, position 6")))
        << view.transcriptB()->describe(6).toStdString();
    EXPECT_TRUE(view.transcriptB()->describe(7).startsWith(QStringLiteral("\u201c keys\u21b5\u201d")))
        << "a newline shown as ↵";

    EXPECT_TRUE(view.header().contains("no press")) << view.header().toStdString();
    trace::SessionMetadata pressed = metadata;
    pressed.cacheSettingsJson = R"({"kind": "dynamic", "press": {"name": "snapkv", "ratio": 0.5, "options": {}}})";
    a.setRecordedSession(pressed, produce({{1, " cache"}, {2, " holds"}, {3, " past"}, {4, " keys"}}, 0.9, 4), "A");
    EXPECT_TRUE(view.header().contains("press SnapKV (ratio 0.5)<br><b>B</b>")) << view.header().toStdString();

    // Identical texts: nothing is marked.
    b.setRecordedSession(metadata, produce({{1, " cache"}, {2, " holds"}, {3, " past"}, {4, " keys"}}, 0.9, 4), "B");
    EXPECT_EQ(view.firstDivergentStep(), -1);
    EXPECT_EQ(view.transcriptA()->partingPosition(), -1);
    EXPECT_EQ(view.transcriptB()->partingPosition(), -1);
}

} // namespace
} // namespace kvscope::gui
