// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/ServerAttachment.h"

#include "kvscope/config/BuildInfo.h"
#include "kvscope/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace kvscope::attach {

struct ServerAttachment::Text {
    tokenizer::Tokenizer tokenizer;
    /// A token's text; an id the tokenizer refuses (the stream is untrusted) has none.
    std::string pieceOf(std::int64_t id) const {
        if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
            return {};
        }
        const std::int32_t one[] = {static_cast<std::int32_t>(id)};
        try {
            return tokenizer.decode(one);
        } catch (const std::exception&) {
            return {};
        }
    }
};

ServerAttachment::ServerAttachment(const config::AttachSettings& settings, trace::EventSink& sink,
                                   const std::string& tokenizerPath)
    : m_text(tokenizerPath.empty() ? nullptr
                                   : std::make_unique<Text>(Text{tokenizer::Tokenizer::fromPath(tokenizerPath)})),
      m_subscriber({settings.endpoint, settings.replayEndpoint, settings.topic}),
      m_recorder(sink, m_text ? ServerStreamRecorder::PieceFunction(
                                    [text = m_text.get()](std::int64_t id) { return text->pieceOf(id); })
                              : ServerStreamRecorder::PieceFunction()) {
    if (!settings.metricsUrl.empty()) {
        m_metrics = std::make_unique<MetricsScraper>(settings.metricsUrl);
    }
}

ServerAttachment::~ServerAttachment() = default;

std::vector<ReceivedBatch> ServerAttachment::poll(int timeoutMs) {
    std::vector<ReceivedBatch> received = m_subscriber.poll(timeoutMs);
    for (const ReceivedBatch& batch : received) {
        m_recorder.record(batch, m_subscriber);
    }
    if (m_metrics && std::chrono::steady_clock::now() >= m_nextScrape) {
        // Once a second at most: /metrics is cheap for the server, but not free.
        m_nextScrape = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        if (const auto counters = m_metrics->scrape(500)) {
            m_metricsError.clear();
            m_recorder.recordMetrics(*counters, m_subscriber);
        } else {
            m_metricsError = m_metrics->lastError();
        }
    }
    return received;
}

trace::SessionMetadata ServerAttachment::sessionMetadata(const config::AttachSettings& settings,
                                                         const std::string& tokenizer) {
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = config::BuildInfo::version();
    metadata.model = "server " + settings.endpoint;
    metadata.cacheKind = "server";
    metadata.cacheSettingsJson = nlohmann::json{{"endpoint", settings.endpoint},
                                                {"replay_endpoint", settings.replayEndpoint},
                                                {"topic", settings.topic},
                                                {"metrics", settings.metricsUrl}}
                                     .dump();
    metadata.device = "server";
    metadata.tokenizer = tokenizer;
    metadata.prompt = "KV events of " + settings.endpoint;
    metadata.createdUnixNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    return metadata;
}

} // namespace kvscope::attach
