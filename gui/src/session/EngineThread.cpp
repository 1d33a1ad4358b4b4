// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/EngineThread.h"

#include <algorithm>

namespace kvscope::gui {

EngineThread::EngineThread() : m_thread([this] { run(); }) {}

EngineThread::~EngineThread() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
        m_queue.clear();
    }
    m_wake.notify_all();
    m_thread.join();
}

void EngineThread::post(const std::string& tag, Job job) {
    {
        std::lock_guard lock(m_mutex);
        auto waiting = std::find_if(m_queue.begin(), m_queue.end(),
                                    [&](const Request& request) { return request.tag == tag; });
        if (waiting != m_queue.end()) {
            waiting->job = std::move(job);
        } else {
            m_queue.push_back({tag, std::move(job)});
        }
    }
    m_wake.notify_one();
}

void EngineThread::dropPending() {
    std::lock_guard lock(m_mutex);
    m_queue.clear();
    m_idle.notify_all();
}

std::size_t EngineThread::pendingCount() const {
    std::lock_guard lock(m_mutex);
    return m_queue.size();
}

void EngineThread::waitIdle() {
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return m_queue.empty() && !m_running; });
}

void EngineThread::run() {
    std::unique_lock lock(m_mutex);
    while (true) {
        m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
        if (m_stopping) {
            return;
        }
        Job job = std::move(m_queue.front().job);
        m_queue.pop_front();
        m_running = true;
        lock.unlock();
        job();
        lock.lock();
        m_running = false;
        if (m_queue.empty()) {
            m_idle.notify_all();
        }
    }
}

} // namespace kvscope::gui
