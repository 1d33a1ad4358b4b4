// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace kvscope::gui {

/// The one thread all engine work runs on (RenderDoc's replay thread): jobs run in posting order, and
/// a job posted with the tag of a job still waiting replaces that one in place, so a burst of "advance"
/// requests costs one run. Jobs report back to the GUI themselves, through queued calls on a guarded
/// QObject. The destructor lets the running job finish, drops the waiting ones and joins.
class EngineThread {
public:
    using Job = std::function<void()>;

    EngineThread();
    ~EngineThread();
    EngineThread(const EngineThread&) = delete;
    EngineThread& operator=(const EngineThread&) = delete;

    void post(const std::string& tag, Job job);
    /// Drops every waiting job (the running one finishes).
    void dropPending();
    std::size_t pendingCount() const;
    /// Blocks until no job runs or waits; for tests and the headless screenshot path only.
    void waitIdle();
    bool isEngineThread() const { return std::this_thread::get_id() == m_thread.get_id(); }

private:
    struct Request {
        std::string tag;
        Job job;
    };

    void run();

    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    std::deque<Request> m_queue;
    bool m_running = false;
    bool m_stopping = false;
    std::thread m_thread;
};

} // namespace kvscope::gui
