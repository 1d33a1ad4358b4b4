// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/attach/KvEventSubscriber.h"
#include "kvscope/attach/MetricsScraper.h"
#include "kvscope/attach/ServerStreamRecorder.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/trace/SessionMetadata.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::attach {

/// A running server followed (kvscope --attach, kvscope-cli attach): its KV event stream subscribed, caught up
/// from the replay socket, every message recorded to a sink as a session step, and its /metrics read once a
/// second when given (a server that does not answer is retried; metricsError() says why).
class ServerAttachment {
public:
    /// tokenizerPath: the served model's tokenizer (Hugging Face folder, tokenizer.json or tokenizer.model) to
    /// give stored blocks their text; empty for none. Throws paged::PagedError naming an endpoint or metrics
    /// address that cannot be used, tokenizer::TokenizerError for a tokenizer that does not load.
    ServerAttachment(const config::AttachSettings& settings, trace::EventSink& sink,
                     const std::string& tokenizerPath = {});
    ~ServerAttachment();

    /// Waits at most timeoutMs for messages, records them (and the metrics when a second has passed) and
    /// returns them.
    std::vector<ReceivedBatch> poll(int timeoutMs);

    const KvEventSubscriber& subscriber() const { return m_subscriber; }
    std::int64_t steps() const { return m_recorder.steps(); }
    /// Why the last /metrics read failed; empty when it worked or no address was given.
    const std::string& metricsError() const { return m_metricsError; }

    /// What an attached session's file says of itself: the server as its model, cache kind "server", the
    /// settings as its cache settings, the tokenizer's source.
    static trace::SessionMetadata sessionMetadata(const config::AttachSettings& settings,
                                                  const std::string& tokenizer);

private:
    struct Text;
    std::unique_ptr<Text> m_text; ///< before the recorder, whose piece function reads it
    KvEventSubscriber m_subscriber;
    ServerStreamRecorder m_recorder;
    std::unique_ptr<MetricsScraper> m_metrics;
    std::chrono::steady_clock::time_point m_nextScrape;
    std::string m_metricsError;
};

} // namespace kvscope::attach
