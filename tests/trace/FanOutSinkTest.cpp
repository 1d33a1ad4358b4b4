// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/FanOutSink.h"

#include "kvscope/trace/Event.h"
#include "kvscope/trace/RecordingSink.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace kvscope::trace;

namespace {

// Logs which sink saw which event, to check the forwarding order across sinks.
class OrderSink final : public EventSink {
public:
    OrderSink(std::string name, std::vector<std::string>& log) : m_name(std::move(name)), m_log(log) {}
    void emit(const Event& event) override { m_log.push_back(m_name + ":" + std::to_string(event.sequence)); }

private:
    std::string m_name;
    std::vector<std::string>& m_log;
};

} // namespace

TEST(FanOutSinkTest, ForwardsEveryEventToEverySinkInOrder) {
    std::vector<std::string> log;
    OrderSink a("a", log);
    OrderSink b("b", log);
    FanOutSink fanOut{&a, &b};
    fanOut.emit(Event{0, -1, 1, ResetEvent{}});
    fanOut.emit(Event{0, -1, 2, ResetEvent{}});
    EXPECT_EQ(log, (std::vector<std::string>{"a:1", "b:1", "a:2", "b:2"}));
}

TEST(FanOutSinkTest, IgnoresNullAndRemovesSinks) {
    RecordingSink first;
    RecordingSink second;
    FanOutSink fanOut;
    fanOut.addSink(nullptr);
    fanOut.addSink(&first);
    fanOut.addSink(&second);
    EXPECT_EQ(fanOut.sinkCount(), 2u);
    fanOut.emit(Event{0, 1, 0, MaskSizesEvent{1, 2, 0}});

    EXPECT_TRUE(fanOut.removeSink(&first));
    EXPECT_FALSE(fanOut.removeSink(&first));
    fanOut.emit(Event{1, 1, 1, MaskSizesEvent{1, 3, 0}});

    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(second.events()[1], (Event{1, 1, 1, MaskSizesEvent{1, 3, 0}}));
}

TEST(FanOutSinkTest, NestedFanOutsAndEmptyFanOut) {
    RecordingSink leaf;
    FanOutSink inner{&leaf};
    FanOutSink outer{&inner, &leaf};
    outer.emit(Event{0, -1, 0, ResetEvent{}});
    EXPECT_EQ(leaf.size(), 2u);

    FanOutSink empty;
    empty.emit(Event{0, -1, 0, ResetEvent{}}); // nothing to forward to, nothing happens
    EXPECT_EQ(empty.sinkCount(), 0u);
}
