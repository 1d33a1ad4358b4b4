// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/Request.h"
#include "kvscope/paged/Scheduler.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/serving/PagedModelRunner.h"
#include "kvscope/trace/EventEmitter.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::runtime {
class TextCodec;
}

namespace kvscope::serving {

/// How a served request picks its tokens: greedy by default; with a temperature, seeded sampling (top-k
/// optional) from a generator of its own, seeded with `seed`, so a request samples what it samples alone
/// (runtime::Generator with the same seed), whatever else is batched with it.
struct SamplingSettings {
    double temperature = 0.0;
    int64_t topK = 0;
    uint64_t seed = 0;
};

/// Serves a workload with a model: drives paged::Scheduler step by step, runs each step on the model over
/// the paged pools (PagedModelRunner), samples, and feeds the tokens back. With an event sink, every step
/// is bracketed by StepBegin/StepEnd, the scheduler's paged events fall in between, and each request that
/// samples adds a Logits event, in the order of its RequestScheduled event (the k-th Logits event of a
/// step belongs to the k-th scheduled request that samples).
class ServingLoop {
public:
    /// `model`, `text` and `sink` must outlive the loop. `config`'s groups are replaced by the model's
    /// (PagedModelRunner::pagedGroups); a model with linear-attention layers gets prefix caching turned off
    /// (a recurrent state summarises every earlier token, so a request cannot skip a cached prefix), said
    /// in notices(). Throws paged::PagedError for a model or config that cannot be served.
    ServingLoop(model::LanguageModel& model, const runtime::TextCodec& text, paged::PagedConfig config,
                SamplingSettings sampling = {}, trace::EventSink* sink = nullptr);
    ~ServingLoop();
    ServingLoop(const ServingLoop&) = delete;
    ServingLoop& operator=(const ServingLoop&) = delete;

    /// Queues a workload's requests, `prompt` text encoded by the model's text codec (bos where it adds one).
    void add(const paged::Workload& workload);
    void add(paged::Request request);

    /// One scheduler step on the model; false, doing nothing, once every request has finished.
    bool step();
    /// Steps until every request has finished.
    void run();

    const paged::Scheduler& scheduler() const { return *m_scheduler; }
    /// The pool's prefix-cache events as vLLM publishes them (kvscope-cli serve --kv-events); null: none.
    void setKvEventSink(paged::KvEventSink* sink) { m_scheduler->setKvEventSink(sink); }
    const paged::PagedConfig& config() const { return m_config; }
    const PagedModelRunner& runner() const { return m_runner; }
    PagedModelRunner& runner() { return m_runner; }
    const std::vector<std::string>& notices() const { return m_notices; }
    /// Keeps, per request, the logits [vocab] of every token it sampled (the tests compare them with solo
    /// runs); off by default.
    void keepLogits(bool keep) { m_keepLogits = keep; }
    /// Empty for a request that sampled nothing or when logits are not kept.
    const std::vector<at::Tensor>& sampledLogits(const std::string& requestId) const;

private:
    int64_t pick(const std::string& requestId, const at::Tensor& logits);

    model::LanguageModel& m_model;
    const runtime::TextCodec& m_text;
    /// Before m_config: building the config may add a notice.
    std::vector<std::string> m_notices;
    paged::PagedConfig m_config;
    SamplingSettings m_sampling;
    trace::EventEmitter m_emitter;
    std::unique_ptr<paged::Scheduler> m_scheduler;
    PagedModelRunner m_runner;
    std::map<std::string, at::Generator> m_generators;
    bool m_keepLogits = false;
    std::map<std::string, std::vector<at::Tensor>> m_logits;
};

} // namespace kvscope::serving
