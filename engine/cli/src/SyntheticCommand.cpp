// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/SyntheticCommand.h"

#include "kvscope/synthetic/SyntheticSession.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <regex>

namespace kvscope::cli {

CLI::App* SyntheticCommand::addSubcommand(CLI::App& app, Options& options) {
    CLI::App* command = app.add_subcommand(
        "synthetic",
        "Write a model-free session of LAYERSxTOKENS (e.g. 32x131072) to a file, for tests and demos");
    command->add_option("SIZE", options.size, "LAYERSxTOKENS, e.g. 32x131072")->required();
    command
        ->add_option("--cache", options.cache, "hybrid (dynamic, sliding and quantized layers) or offloaded")
        ->check(CLI::IsMember({"hybrid", "offloaded"}));
    command->add_option("--out", options.out, "Session file to write (.kvsess)")->required();
    return command;
}

int SyntheticCommand::execute(const Options& options, std::ostream& out, std::ostream& err) {
    std::smatch match;
    if (!std::regex_match(options.size, match, std::regex(R"((\d{1,4})x(\d{1,9}))")) ||
        std::stoi(match[1]) < 1 || std::stoll(match[2]) < 1) {
        err << "kvscope-cli synthetic: SIZE must be LAYERSxTOKENS with 1 to 9999 layers and at least one "
               "token, "
               "e.g. 32x131072; got `"
            << options.size << "`\n";
        return 2;
    }
    const auto options_ = synthetic::SyntheticSession::sized(std::stoi(match[1]), std::stoll(match[2]),
                                                             options.cache == "offloaded");
    try {
        const auto written = synthetic::SyntheticSession::write(options_, options.out);
        out << nlohmann::json{{"layers", options_.layers}, {"tokens", options_.tokens},
                              {"steps", written.steps},    {"events", written.events},
                              {"bytes", written.bytes},    {"out", options.out}}
                   .dump()
            << std::endl;
    } catch (const std::exception& error) {
        err << "kvscope-cli synthetic: " << error.what() << "\n";
        return 2;
    }
    return 0;
}

} // namespace kvscope::cli
