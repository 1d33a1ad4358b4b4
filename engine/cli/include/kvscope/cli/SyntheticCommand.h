// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

namespace kvscope::cli {

/// `kvscope-cli synthetic LAYERSxTOKENS [--cache offloaded] --out FILE`: writes a model-free session of
/// that size to a file (the sessions `kvscope --synthetic` shows), streamed, so any size fits in memory.
class SyntheticCommand {
public:
    struct Options {
        std::string size; ///< LAYERSxTOKENS
        std::string cache = "hybrid";
        std::string out;
    };
    static CLI::App* addSubcommand(CLI::App& app, Options& options);
    /// Prints {"layers", "tokens", "steps", "events", "bytes", "out"}; 2 on bad input or a write failure.
    static int execute(const Options& options, std::ostream& out, std::ostream& err);
};

} // namespace kvscope::cli
