// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// `kvscope-cli attach ENDPOINT`: subscribes to a running vLLM or SGLang server's KV event stream
/// (attach::ServerAttachment), catching up through its replay socket, writes the events as JSON lines
/// (`--kv-events`, the format of `serve --kv-events`) and as a session (`--session`, what `kvscope --attach`
/// records; its blocks' text with `--tokenizer`, the server's hit counters with `--metrics`) and, when stopped (Ctrl-C, SIGTERM or `--seconds`),
/// prints a JSON summary: messages, events per type and medium, gaps, refused messages. Torch-free.
class AttachCommand {
public:
    struct Options {
        std::string endpoint;
        std::string replayEndpoint;
        std::string topic;
        std::string kvEvents;
        std::string session;
        std::string tokenizer;
        std::string metrics;
        double seconds = 0; ///< 0: until interrupted
    };
    static CLI::App* addSubcommand(CLI::App& app, Options& options);
    static int execute(const Options& options, std::ostream& out, std::ostream& err);
};

} // namespace kvscope::cli
