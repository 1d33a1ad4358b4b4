// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/AttachCommand.h"

#include "kvscope/attach/KvEventSubscriber.h"
#include "kvscope/paged/KvEventsJsonl.h"
#include "kvscope/paged/PagedError.h"

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
    attach->add_option("--seconds", options.seconds, "Stop after this many seconds (default: when interrupted)")
        ->check(CLI::NonNegativeNumber);
    return attach;
}

int AttachCommand::execute(const Options& options, std::ostream& out, std::ostream& err) {
    try {
        std::unique_ptr<paged::KvEventsJsonl> file;
        if (!options.kvEvents.empty())
            file = std::make_unique<paged::KvEventsJsonl>(options.kvEvents);
        attach::KvEventSubscriber subscriber({options.endpoint, options.replayEndpoint, options.topic});
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
            for (const attach::ReceivedBatch& received : subscriber.poll(100)) {
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
        if (file)
            summary["kv_events"] = {{"file", options.kvEvents}, {"events", file->eventsWritten()}};
        out << summary.dump(2) << '\n';
        return 0;
    } catch (const paged::PagedError& error) {
        err << "kvscope-cli attach: " << error.what() << '\n';
        return 1;
    }
}

} // namespace kvscope::cli
