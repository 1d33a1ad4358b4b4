// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/SyntheticCommand.h"

#include "kvscope/config/CacheKind.h"
#include "kvscope/synthetic/SyntheticSession.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <regex>

namespace kvscope::cli {

namespace {

/// The caches a synthetic session can stand for: the hybrid layer mix, or the run's offloaded kind (named as
/// config::CacheKind names it, so that `--cache offloaded` means here what it means to `run`).
struct SyntheticCache {
    std::string name;
    std::string help;
    bool offload;
};

const std::vector<SyntheticCache>& syntheticCaches() {
    static const std::vector<SyntheticCache> caches = {
        {"hybrid", "dynamic, sliding and quantized layers", false},
        {std::string(config::toString(config::CacheKind::Offloaded)),
         "every layer but the first offloaded and prefetched around its update", true},
    };
    return caches;
}

const SyntheticCache& syntheticCache(const std::string& name) {
    for (const SyntheticCache& cache : syntheticCaches()) {
        if (cache.name == name) {
            return cache;
        }
    }
    return syntheticCaches().front(); // CLI11's IsMember check has refused anything else
}

} // namespace

CLI::App* SyntheticCommand::addSubcommand(CLI::App& app, Options& options) {
    CLI::App* command = app.add_subcommand(
        "synthetic",
        "Write a model-free session of LAYERSxTOKENS (e.g. 32x131072) to a file, for tests and demos");
    command->add_option("SIZE", options.size, "LAYERSxTOKENS, e.g. 32x131072")->required();
    std::string help;
    std::vector<std::string> names;
    for (const SyntheticCache& cache : syntheticCaches()) {
        help += (help.empty() ? "" : ", or ") + cache.name + " (" + cache.help + ")";
        names.push_back(cache.name);
    }
    command->add_option("--cache", options.cache, help)->check(CLI::IsMember(names));
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
                                                             syntheticCache(options.cache).offload);
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
