// SPDX-License-Identifier: GPL-3.0-or-later
// A serving SessionEngine for the GUI tests: kvscope_paged's scheduler (the real bookkeeping, torch-free)
// over a workload, with a stand-in model answering every request with the same sentence, bracketed by
// StepBegin/StepEnd as serving::ServingLoop records a step. Text prompts are bytes, as the byte tokenizer.
#pragma once

#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/Scheduler.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/trace/EventEmitter.h"

#include <memory>
#include <string>

namespace kvscope::gui::testing {

class StandInServingEngine final : public SessionEngine {
public:
    explicit StandInServingEngine(const config::RunSettings& settings)
        : m_config(paged::PagedConfig::fromSettings(settings.serving.value())),
          m_workload(paged::Workload::load(paged::WorkloadCatalog::resolve(settings.serving->workload))) {}

    void start(trace::EventSink& sink) override {
        m_emitter = std::make_unique<trace::EventEmitter>(&sink);
        m_scheduler = std::make_unique<paged::Scheduler>(m_config, m_emitter.get());
        // Bytes are ids 0..255 (their piece the byte); the answer's bytes 1000 + byte; prompt ids as named.
        m_scheduler->setPieceFunction([](paged::TokenId id) {
            return id < 256 || (id >= 1000 && id < 1256) ? std::string(1, static_cast<char>(id % 1000))
                                                         : " t" + std::to_string(id);
        });
        for (const paged::WorkloadRequest& described : m_workload.requests) {
            paged::Request request;
            request.id = described.id;
            request.arrivalStep = described.arrivalStep;
            if (described.prompt) {
                for (const char c : *described.prompt) {
                    request.promptIds.push_back(static_cast<unsigned char>(c));
                }
            } else {
                request.promptIds.assign(described.promptIds.begin(), described.promptIds.end());
            }
            request.maxTokens = described.maxTokens;
            request.ignoreEos = true;
            m_scheduler->addRequest(std::move(request));
        }
        step();
    }

    bool step() override {
        if (!m_scheduler || !m_scheduler->hasUnfinishedRequests()) {
            return false;
        }
        static const std::string answer = " The library opens at nine.";
        const std::int64_t step = m_scheduler->step();
        m_emitter->setStep(step);
        m_emitter->emit(-1, trace::StepBeginEvent{-1, "serving step " + std::to_string(step)});
        const paged::SchedulerOutput output = m_scheduler->schedule();
        std::vector<paged::TokenId> sampled;
        for (const auto& scheduled : output.requests) {
            const auto& request = m_scheduler->request(scheduled.requestId);
            sampled.push_back(1000 +
                              static_cast<unsigned char>(answer[request.outputIds.size() % answer.size()]));
        }
        m_scheduler->update(output, sampled, -1);
        m_emitter->setStep(step);
        m_emitter->emit(-1, trace::StepEndEvent{-1, "", 0});
        return true;
    }

    bool finished() const override { return !m_scheduler || !m_scheduler->hasUnfinishedRequests(); }
    std::int64_t generatedCount() const override {
        return m_scheduler ? std::max<std::int64_t>(0, m_scheduler->step() - 1) : 0;
    }
    trace::SessionMetadata metadata() const override {
        trace::SessionMetadata metadata;
        metadata.model = "stand-in";
        metadata.cacheKind = "paged";
        metadata.prompt = m_workload.description;
        return metadata;
    }

private:
    paged::PagedConfig m_config;
    paged::Workload m_workload;
    std::unique_ptr<trace::EventEmitter> m_emitter;
    std::unique_ptr<paged::Scheduler> m_scheduler;
};

/// Serving settings get a StandInServingEngine, any other a SyntheticEngine.
inline SessionEngineFactory servingFactory() {
    return [](const config::RunSettings& settings) -> std::unique_ptr<SessionEngine> {
        if (settings.serving) {
            return std::make_unique<StandInServingEngine>(settings);
        }
        return std::make_unique<SyntheticEngine>(SyntheticEngine::optionsFor(settings));
    };
}

} // namespace kvscope::gui::testing
