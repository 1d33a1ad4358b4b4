// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/AttachCommand.h"

#include "kvscope/attach/ServerAttachment.h"
#include "kvscope/config/ConfigError.h"
#include "kvscope/paged/KvEventsJsonl.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/tokenizer/TokenizerError.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SessionWriter.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

namespace kvscope::cli {

namespace {

std::atomic<bool> stopRequested{false};

extern "C" void requestStop(int) {
    stopRequested = true;
}

std::string typeName(paged::KvCacheEvent::Type type) {
    switch (type) {
    case paged::KvCacheEvent::Type::BlockStored:
        return "BlockStored";
    case paged::KvCacheEvent::Type::BlockRemoved:
        return "BlockRemoved";
    case paged::KvCacheEvent::Type::AllBlocksCleared:
        return "AllBlocksCleared";
    }
    return "unknown";
}

/// Events with nowhere to go (no --session).
class DiscardingSink final : public trace::EventSink {
public:
    void emit(const trace::Event&) override {}
};

} // namespace

CLI::App* AttachCommand::addSubcommand(CLI::App& app, Options& options) {
    CLI::App* attach = app.add_subcommand(
        "attach", "Follow a running vLLM (or SGLang) server's KV cache through its KV event stream; JSON summary "
                  "on stdout when stopped (Ctrl-C, or --seconds)");
    attach->add_option("endpoint", options.endpoint,
                       "The server's KV event endpoint (vLLM's --kv-events-config endpoint; tcp://HOST:PORT or "
                       "ipc://PATH)")
        ->required();
    attach->add_option("--replay", options.replayEndpoint,
                       "The server's replay endpoint (vLLM's replay_endpoint): catch up from its first message and "
                       "fill gaps")
        ->type_name("ENDPOINT");
    attach->add_option("--topic", options.topic, "Only messages of this topic (vLLM's topic; default: all)");
    attach->add_option("--kv-events", options.kvEvents,
                       "Write every event to FILE as JSON lines (the format of kvscope-cli serve --kv-events)")
        ->type_name("FILE");
    attach->add_option("--session", options.session,
                       "Record the stream to FILE.kvsess as it comes, one step per message (what kvscope --attach "
                       "records; replay it with kvscope FILE or kvscope-cli replay)")
        ->type_name("FILE");
    attach->add_option("--tokenizer", options.tokenizer,
                       "The served model's tokenizer (a Hugging Face folder, tokenizer.json or tokenizer.model): the "
                       "session holds the stored blocks' text")
        ->type_name("PATH");
    attach->add_option("--metrics", options.metrics,
                       "The server's metrics page, http://HOST:PORT/metrics: its prefix-cache counters once a second")
        ->type_name("URL");
    attach->add_option("--seconds", options.seconds, "Stop after this many seconds (default: when interrupted)")
        ->check(CLI::NonNegativeNumber);
    return attach;
}

int AttachCommand::execute(const Options& options, std::ostream& out, std::ostream& err) {
    try {
        std::unique_ptr<paged::KvEventsJsonl> file;
        if (!options.kvEvents.empty())
            file = std::make_unique<paged::KvEventsJsonl>(options.kvEvents);
        const config::AttachSettings settings{options.endpoint, options.replayEndpoint, options.topic,
                                              options.metrics, options.seconds};
        std::unique_ptr<trace::EventSink> sink;
        if (options.session.empty()) {
            sink = std::make_unique<DiscardingSink>();
        } else {
            sink = std::make_unique<trace::SessionWriter>(
                options.session, attach::ServerAttachment::sessionMetadata(settings, options.tokenizer));
        }
        attach::ServerAttachment attachment(settings, *sink, options.tokenizer);
        const attach::KvEventSubscriber& subscriber = attachment.subscriber();
        stopRequested = false;
        std::signal(SIGINT, requestStop);
        std::signal(SIGTERM, requestStop);
        const auto started = std::chrono::steady_clock::now();
        const auto elapsed = [&] {
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        };
        std::map<std::string, std::int64_t> perType;
        std::map<std::string, std::int64_t> perMedium;
        std::int64_t events = 0;
        while (!stopRequested && (options.seconds <= 0 || elapsed() < options.seconds)) {
            for (const attach::ReceivedBatch& received : attachment.poll(100)) {
                for (const paged::KvCacheEvent& event : received.batch.events) {
                    ++events;
                    ++perType[typeName(event.type)];
                    if (!event.medium.empty())
                        ++perMedium[event.medium];
                    if (file)
                        file->publish(event);
                }
            }
        }
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        nlohmann::json gaps = nlohmann::json::array();
        for (const auto& gap : subscriber.gaps())
            gaps.push_back({{"first", gap.first}, {"last", gap.last}});
        const double seconds = elapsed();
        nlohmann::json summary = {{"endpoint", options.endpoint},
                                  {"replay", options.replayEndpoint},
                                  {"seconds", seconds},
                                  {"messages", subscriber.messages()},
                                  {"events", events},
                                  {"per_type", perType},
                                  {"per_medium", perMedium},
                                  {"gaps", gaps},
                                  {"notices", subscriber.notices()}};
        if (auto* writer = dynamic_cast<trace::SessionWriter*>(sink.get())) {
            writer->finish();
            summary["session"] = {{"file", options.session}, {"steps", writer->stepsWritten()},
                                  {"events", writer->eventsWritten()}};
        }
        if (!options.metrics.empty())
            summary["metrics"] = {{"url", options.metrics}, {"error", attachment.metricsError()}};
        if (file)
            summary["kv_events"] = {{"file", options.kvEvents}, {"events", file->eventsWritten()}};
        out << summary.dump(2) << '\n';
        return 0;
    } catch (const paged::PagedError& error) {
        err << "kvscope-cli attach: " << error.what() << '\n';
        return 1;
    } catch (const tokenizer::TokenizerError& error) {
        err << "kvscope-cli attach: --tokenizer: " << error.what() << '\n';
        return 1;
    } catch (const std::exception& error) {
        // The session file could not be written (trace::SessionError, filesystem errors).
        err << "kvscope-cli attach: " << error.what() << '\n';
        return 1;
    }
}

} // namespace kvscope::cli
