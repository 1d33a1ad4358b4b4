// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/ServingLoop.h"

#include "kvscope/model/LanguageModel.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/TextCodec.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <chrono>
#include <limits>

namespace kvscope::serving {
namespace {

paged::PagedConfig withModelGroups(paged::PagedConfig config, const model::Architecture& architecture,
                                   std::vector<std::string>& notices) {
    config.groups = PagedModelRunner::pagedGroups(architecture);
    if (config.prefixCaching && LayerGroups(architecture).hasLinearAttention()) {
        config.prefixCaching = false;
        notices.push_back("prefix caching is off: model_type `" + architecture.config().modelType +
                          "` has linear-attention layers, whose per-request recurrent state summarises every "
                          "earlier token, so a request cannot start after a cached prefix");
    }
    config.validate();
    return config;
}

} // namespace

ServingLoop::ServingLoop(model::LanguageModel& model, const runtime::TextCodec& text,
                         paged::PagedConfig config, SamplingSettings sampling, trace::EventSink* sink)
    : m_model(model), m_text(text),
      m_config(withModelGroups(std::move(config), model.architecture(), m_notices)), m_sampling(sampling),
      m_emitter(sink),
      m_scheduler(std::make_unique<paged::Scheduler>(m_config, sink != nullptr ? &m_emitter : nullptr)),
      m_runner(model, m_config) {
    // Sessions carry each request's text, so that a replay shows it with no tokenizer.
    m_scheduler->setPieceFunction([this](paged::TokenId id) { return m_text.piece(id); });
}

ServingLoop::~ServingLoop() = default;

void ServingLoop::add(const paged::Workload& workload) {
    for (const paged::WorkloadRequest& described : workload.requests) {
        paged::Request request;
        request.id = described.id;
        request.arrivalStep = described.arrivalStep;
        request.promptIds = described.prompt ? m_text.encode(*described.prompt) : described.promptIds;
        for (const paged::TokenId id : request.promptIds) {
            if (id < 0 || id >= m_model.architecture().vocabSize()) {
                throw paged::PagedError("request `" + described.id + "`: prompt token id " +
                                        std::to_string(id) + " is outside the model's vocabulary (0 to " +
                                        std::to_string(m_model.architecture().vocabSize() - 1) +
                                        "); use ids the model's tokenizer gives, or `prompt` text");
            }
        }
        request.maxTokens = described.maxTokens;
        request.ignoreEos = described.ignoreEos;
        request.cacheSalt = described.cacheSalt;
        add(std::move(request));
    }
}

void ServingLoop::add(paged::Request request) {
    m_scheduler->addRequest(std::move(request));
}

int64_t ServingLoop::pick(const std::string& requestId, const at::Tensor& logits) {
    if (m_sampling.temperature <= 0.0) {
        return logits.argmax().item<int64_t>();
    }
    auto found = m_generators.find(requestId);
    if (found == m_generators.end()) {
        found =
            m_generators.emplace(requestId, at::make_generator<at::CPUGeneratorImpl>(m_sampling.seed)).first;
    }
    // runtime::Generator's sampling, draw for draw.
    at::Tensor scaled = logits.to(at::kCPU).to(at::kDouble) / m_sampling.temperature;
    if (m_sampling.topK > 0 && m_sampling.topK < scaled.size(0)) {
        const double threshold = std::get<0>(scaled.topk(m_sampling.topK)).min().item<double>();
        scaled = scaled.masked_fill(scaled < threshold, -std::numeric_limits<double>::infinity());
    }
    return at::multinomial(at::softmax(scaled, 0), 1, false, found->second).item<int64_t>();
}

bool ServingLoop::step() {
    if (!m_scheduler->hasUnfinishedRequests()) {
        return false;
    }
    const auto start = std::chrono::steady_clock::now();
    const int64_t step = m_scheduler->step();
    m_emitter.setStep(step);
    m_emitter.emit(-1, trace::StepBeginEvent{-1, "serving step " + std::to_string(step)});
    const paged::SchedulerOutput output = m_scheduler->schedule();
    const std::vector<at::Tensor> logits = m_runner.execute(output);
    std::vector<paged::TokenId> sampled(output.requests.size(), -1);
    std::string summary;
    for (size_t index = 0; index < output.requests.size(); ++index) {
        if (!logits[index].defined()) {
            continue;
        }
        const std::string& id = output.requests[index].requestId;
        sampled[index] = pick(id, logits[index]);
        if (m_keepLogits) {
            m_logits[id].push_back(logits[index].to(at::kCPU));
        }
        if (m_emitter.enabled()) {
            m_emitter.setStep(step);
            m_emitter.emit(-1, runtime::Generator::logitsEventOf(logits[index]));
            summary += (summary.empty() ? "" : " ") + id + ":" + m_text.piece(sampled[index]);
        }
    }
    const std::optional<std::int64_t> eos = m_text.eosId();
    for (const std::string& finished : m_scheduler->update(output, sampled, eos.value_or(-1))) {
        m_runner.release(finished);
        m_generators.erase(finished);
    }
    if (m_emitter.enabled()) {
        m_emitter.setStep(step);
        const auto elapsed = std::chrono::steady_clock::now() - start;
        m_emitter.emit(
            -1, trace::StepEndEvent{-1, summary,
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()});
    }
    return true;
}

void ServingLoop::run() {
    while (step()) {
    }
}

const std::vector<at::Tensor>& ServingLoop::sampledLogits(const std::string& requestId) const {
    static const std::vector<at::Tensor> none;
    const auto found = m_logits.find(requestId);
    return found == m_logits.end() ? none : found->second;
}

} // namespace kvscope::serving
