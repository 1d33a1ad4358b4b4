// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PagedExplainer.h"

#include "PagedTestSessions.h"
#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/trace/Timeline.h"

#include <gtest/gtest.h>
#include <ostream>

// Failures print the sentences, not their UTF-16 bytes.
inline void PrintTo(const QString& text, std::ostream* out) {
    *out << '"' << text.toStdString() << '"';
}

namespace kvscope::gui {
namespace {

struct Session {
    std::vector<trace::Event> events;
    trace::Timeline timeline;
    PagedHistory history;
    explicit Session(std::vector<trace::Event> recorded) : events(std::move(recorded)) {
        timeline.emitAll(events);
        history.extend(timeline);
    }
    /// The why of the n-th event of that kind (of that request, when given).
    QString why(trace::EventKind kind, const std::string& request = {}, int nth = 0) const {
        for (const trace::Event& event : events) {
            if (event.kind() != kind) {
                continue;
            }
            const bool matches = std::visit(
                [&](const auto& e) {
                    if constexpr (requires { e.requestId; }) {
                        return request.empty() || e.requestId == request;
                    } else {
                        return true;
                    }
                },
                event.payload);
            if (matches && nth-- == 0) {
                return EventExplainer::why(event, trace::StepState{}, {}, std::nullopt, &history);
            }
        }
        ADD_FAILURE() << "no such event";
        return {};
    }
};

TEST(PagedExplainerTest, TheDesignDocumentExampleInSentences) {
    const Session session(testing::designExample());
    using K = trace::EventKind;
    struct Row {
        K kind;
        std::string request;
        int nth;
        QString sentence;
    };
    const std::vector<Row> rows = {
        {K::RequestAdmitted, "r2", 0,
         "r2 reused blocks 0, 1, 2 (12 tokens: 'You are a helpful ...') cached by r0; it computes the other "
         "17."},
        {K::BlockEvicted, "", 0,
         "block 3 evicted: least recently freed, cached ' the KV cache keeps'; its hash is forgotten, so no "
         "request "
         "can reuse those tokens any more."},
        {K::RequestFinished, "r1", 0,
         "r1 finished: blocks 6, 5, 1, 0 go to the free queue's tail (newest last). It reached its "
         "max_tokens after "
         "1 output: ' w5014'."},
        {K::RequestFinished, "r0", 0,
         "r0 finished: blocks 4, 3, 2, 1, 0 go to the free queue's tail (newest last). It reached its "
         "max_tokens "
         "after 4 outputs: ' keeps keys and values'."},
        {K::RequestAdmitted, "r1", 0,
         "r1 reused blocks 0, 1 (8 tokens: 'You are a helpful ...') cached by r0; it computes the other 6."},
        {K::RequestAdmitted, "r0", 0,
         "r0 was admitted with none of its 15 tokens in the prefix cache: it computes them all."},
        {K::RequestArrived, "r0", 0,
         "r0 arrived with 15 prompt tokens ('You are a helpful ...') and joins the back of the waiting "
         "queue."},
        {K::RequestScheduled, "r0", 0,
         "r0 computes tokens 0 to 14 ('You are a helpful ...') in this step's batch, then samples its next "
         "token."},
        {K::RequestScheduled, "r0", 1,
         "r0 decodes: it computes the key and value of its last sampled token (position 15, ' keeps') and "
         "samples "
         "the next."},
        {K::BlockAllocated, "r0", 4,
         "r0 needed a new block for tokens 16 to 19: it took block 4 from the head of the free queue (free "
         "the "
         "longest) as slot 4 of its table."},
        {K::BlockTouched, "r2", 2,
         "r2 reuses block 2: tokens 8 to 11 (' and kindly. Say') were cached by r0, so it skips computing "
         "them; "
         "the block's reference count is now 1 and it leaves the free queue."},
        {K::BlockCached, "r0", 3,
         "Block 3 is full: r0's tokens 12 to 15 (' the KV cache keeps') are cached under hash "},
        {K::BlockFreed, "r1", 0,
         "r1 released block 6; no one else holds it, so it joins the free queue at position 6."},
        {K::BlockFreed, "r1", 1,
         "r1 released block 5; no one else holds it, so it joins the free queue at position 7, still cached: "
         "a "
         "later request can reuse it until it reaches the head and is evicted."},
        {K::RequestTokens, "r0", 0, "r0's prompt: 'You are a helpful assistant. Answer ...'."},
        {K::RequestTokens, "r0", 1, "r0 sampled ' keeps' (position 15)."},
    };
    for (const Row& row : rows) {
        const QString got = session.why(row.kind, row.request, row.nth);
        if (row.kind == K::BlockCached) {
            EXPECT_TRUE(got.startsWith(row.sentence)) << got.toStdString();
        } else {
            EXPECT_EQ(got.toStdString(), row.sentence.toStdString())
                << trace::toString(row.kind) << " " << row.request;
        }
    }
}

TEST(PagedExplainerTest, SharedBlocksStayWhenARequestFinishes) {
    const Session session(testing::sharedFinish());
    EXPECT_EQ(session.why(trace::EventKind::RequestFinished, "r1"),
              "r1 finished: block 3 goes to the free queue's tail (newest last), 1 and 0 stay shared. It "
              "reached its "
              "max_tokens after 1 output: ' w5010'.");
    // Releases of blocks still held are recorded before the free queue's insertions.
    EXPECT_EQ(session.why(trace::EventKind::BlockFreed, "r1", 0),
              "r1 released block 1; 1 other request still holds it, so it stays out of the free queue.");
}

// Under vLLM's current policy a block without a hash goes to the head of the free queue.
TEST(PagedExplainerTest, BlocksWithoutAHashGoToTheHeadUnderTheCurrentPolicy) {
    paged::PagedConfig config = testing::exampleConfig();
    config.freePolicy = paged::FreePolicy::Current;
    const Session session(testing::serve(
        config, {testing::request("r0", 0, testing::ids(100, 15), 4),
                 testing::request("r1", 4, testing::join(testing::ids(100, 10), testing::ids(200, 4)), 1)}));
    EXPECT_EQ(
        session.why(trace::EventKind::RequestFinished, "r1"),
        "r1 finished: blocks 5, 2, 1 go to the free queue's tail (newest last), block 6 goes to the free "
        "queue's head, reused first: it holds no hash. It reached its max_tokens after 1 output: ' w5014'.");
}

TEST(PagedExplainerTest, PreemptionsSayForWhomAndWhatIsLost) {
    const Session session(testing::preemption());
    EXPECT_EQ(
        session.why(trace::EventKind::RequestPreempted, "r1"),
        "r1 preempted: no free block for r0's next token, and r1 was the last of the running list; its 2 "
        "blocks were freed and it will be recomputed.");

    // A request preempting itself: no other request takes a block after it in that step.
    std::vector<trace::Event> events = {
        {0, -1, 0, trace::PagedPoolEvent{4, 8, -1, true, 0, {0}, 64, 8}},
        {0, -1, 1, trace::RequestArrivedEvent{"r5", 4, 16}},
        {3, -1, 2, trace::RequestPreemptedEvent{"r5", 26}},
    };
    for (std::int32_t i = 0; i < 7; ++i) {
        events.push_back({3, -1, static_cast<std::uint64_t>(3 + i),
                          trace::BlockFreedEvent{"r5", 0, 6 - i, 6 - i, 0, 1 + i, false}});
    }
    events.push_back({3, -1, 10, trace::RequestScheduledEvent{"r4", 30, 1, true}});
    const Session self(events);
    EXPECT_EQ(
        self.why(trace::EventKind::RequestPreempted, "r5"),
        "r5 preempted: no free block for its next token; its 7 blocks were freed and it will be recomputed.");
}

TEST(PagedExplainerTest, WithoutHistoryTheSentencesStillStand) {
    const trace::Event evicted{5, -1, 40, trace::BlockEvictedEvent{0, 3, 0x3c1f}};
    EXPECT_EQ(EventExplainer::why(evicted, trace::StepState{}),
              "block 3 evicted: least recently freed; its hash is forgotten, so no request can reuse those "
              "tokens any "
              "more.");
    EXPECT_EQ(EventExplainer::summary(evicted), "block 3 (group 0) forgets hash 0000000000003c1f");
    const trace::Event admitted{5, -1, 41, trace::RequestAdmittedEvent{"r2", 29, 12, false}};
    EXPECT_EQ(EventExplainer::why(admitted, trace::StepState{}),
              "r2 reused 12 of its 29 tokens from the prefix cache; it computes the other 17.");
    const trace::Event tokens{0, -1, 2, trace::RequestTokensEvent{"r0", 0, {1, 2, 3}, {}, {}}};
    EXPECT_EQ(EventExplainer::why(tokens, trace::StepState{}),
              "r0's prompt: 3 token ids (no text recorded).");
}

TEST(PagedExplainerTest, ListsAndPreviews) {
    EXPECT_EQ(PagedExplainer::commaList({6, 5}), "6, 5");
    EXPECT_EQ(PagedExplainer::andList({1, 0}), "1 and 0");
    EXPECT_EQ(PagedExplainer::andList({2, 1, 0}), "2, 1 and 0");
    EXPECT_EQ(PagedExplainer::andList({4}), "4");
    EXPECT_EQ(PagedExplainer::preview("You are a helpful assistant"), "You are a helpful ...");
    EXPECT_EQ(PagedExplainer::preview(" cache keeps"), " cache keeps");
    EXPECT_EQ(PagedExplainer::preview("abcdefghijklmnopqrstuvwxyz"),
              "abcdefghijklmnopqrst ..."); // no space to cut at
    EXPECT_EQ(PagedExplainer::preview("line\nbreak"), "line\\nbreak");
}

} // namespace
} // namespace kvscope::gui
