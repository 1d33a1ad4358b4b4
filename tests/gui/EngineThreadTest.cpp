// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/EngineThread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

TEST(EngineThreadTest, RunsJobsInOrderOnItsOwnThread) {
    EngineThread thread;
    std::mutex mutex;
    std::vector<int> order;
    std::atomic<bool> onEngineThread{true};
    for (int index = 0; index < 5; ++index) {
        thread.post("job" + std::to_string(index), [&, index] {
            onEngineThread = onEngineThread && thread.isEngineThread();
            std::lock_guard lock(mutex);
            order.push_back(index);
        });
    }
    thread.waitIdle();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_TRUE(onEngineThread);
    EXPECT_FALSE(thread.isEngineThread());
}

TEST(EngineThreadTest, ANewerRequestReplacesAWaitingOneWithTheSameTag) {
    EngineThread thread;
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    std::vector<std::string> ran;
    std::mutex mutex;
    auto record = [&](std::string name) {
        return [&, name] {
            std::lock_guard lock(mutex);
            ran.push_back(name);
        };
    };
    std::promise<void> blocking;
    thread.post("block", [gate, &blocking] {
        blocking.set_value();
        gate.wait();
    }); // keeps the thread busy while we queue
    blocking.get_future().wait();
    thread.post("advance", record("advance to 2"));
    thread.post("other", record("other"));
    thread.post("advance", record("advance to 3"));
    thread.post("advance", record("advance to 4"));
    EXPECT_EQ(thread.pendingCount(), 2u);
    release.set_value();
    thread.waitIdle();
    // The newest advance ran, in the waiting one's place (before "other").
    EXPECT_EQ(ran, (std::vector<std::string>{"advance to 4", "other"}));
}

TEST(EngineThreadTest, DropPendingAndDestructionLeaveNothingBehind) {
    std::atomic<int> runs{0};
    {
        EngineThread thread;
        std::promise<void> release;
        std::shared_future<void> gate = release.get_future().share();
        std::promise<void> blocking;
        thread.post("block", [gate, &blocking] {
            blocking.set_value();
            gate.wait();
        });
        blocking.get_future().wait();
        thread.post("a", [&] { ++runs; });
        thread.post("b", [&] { ++runs; });
        thread.dropPending();
        EXPECT_EQ(thread.pendingCount(), 0u);
        thread.post("c", [&] { ++runs; });
        release.set_value();
        thread.waitIdle();
        EXPECT_EQ(runs.load(), 1);
        thread.post("d", [&] { ++runs; }); // may or may not run before destruction; must not crash
    }
    EXPECT_GE(runs.load(), 1);
}

} // namespace
} // namespace kvscope::gui
