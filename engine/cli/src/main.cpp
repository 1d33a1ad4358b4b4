// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope-cli: the command-line face of the engine (reference: docs/CLI.md).
// Machine-readable output is one JSON document on stdout; messages go to stderr; exit codes are
// 0 (ok), 1 (a check failed), 2 (bad input).
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/cli/CacheBenchmark.h"
#include "kvscope/cli/ConformanceRecorder.h"
#include "kvscope/cli/ConformanceRunner.h"
#include "kvscope/cli/FidelityCommand.h"
#include "kvscope/cli/GemmBenchmark.h"
#include "kvscope/cli/ModelBenchmark.h"
#include "kvscope/cli/OptionChecks.h"
#include "kvscope/cli/PresetsCommand.h"
#include "kvscope/cli/PressBenchmark.h"
#include "kvscope/cli/PressesCommand.h"
#include "kvscope/cli/ProgressOutput.h"
#include "kvscope/cli/RunCommand.h"
#include "kvscope/cli/AttachCommand.h"
#include "kvscope/cli/ServeCommand.h"
#include "kvscope/cli/SessionCommands.h"
#include "kvscope/cli/SyntheticCommand.h"
#include "kvscope/cli/TokenizeCommand.h"
#include "kvscope/cli/TrainCommand.h"
#include "kvscope/config/OpenMpWaitPolicy.h"
#include "kvscope/config/BuildInfo.h"
#include "kvscope/synthetic/TimelineBenchmark.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

namespace {

using kvscope::cli::OptionChecks;

int runConform(const std::string& directory, kvscope::config::ComputeDevice device, const std::string& record) {
    if (const std::string why = kvscope::cache::DeviceSupport::refusal(device); !why.empty()) {
        std::cerr << "kvscope-cli conform: --device " << kvscope::config::toString(device) << ": " << why << "\n";
        return 2;
    }
    if (!std::filesystem::is_directory(directory)) {
        std::cerr << "kvscope-cli conform: `" << directory << "` is not a directory of fixtures\n";
        return 2;
    }
    kvscope::cli::ConformanceRunner runner(kvscope::cache::DeviceSupport::resolve(device));
    const auto results = runner.runDirectory(directory);
    if (results.empty()) {
        // A run that checked nothing proves nothing: say so rather than report success.
        std::cerr << "kvscope-cli conform: `" << directory << "` holds no *.json fixtures\n";
        return 2;
    }
    size_t passed = 0;
    size_t notImplemented = 0;
    std::optional<double> scoreDeviation;
    // Press fixtures per kind: passed, failed, not implemented (so that partial support shows).
    std::map<std::string, std::array<size_t, 3>> kinds;
    for (const auto& result : results) {
        if (result.passed) {
            ++passed;
        } else if (result.notImplemented) {
            ++notImplemented;
        } else {
            std::cout << result.file << ": " << result.failure << "\n";
        }
        if (!result.kind.empty()) {
            ++kinds[result.kind][result.passed ? 0 : result.notImplemented ? 2 : 1];
        }
        if (result.scoreDeviation) {
            scoreDeviation = std::max(scoreDeviation.value_or(0.0), *result.scoreDeviation);
        }
    }
    for (const auto& [kind, counts] : kinds) {
        std::cout << "kind " << kind << ": ";
        if (counts[2] > 0 && counts[0] + counts[1] == 0) {
            std::cout << "not implemented (" << counts[2] << " fixtures)\n";
        } else {
            std::cout << counts[0] << " passed, " << counts[1] << " failed";
            std::cout << (counts[2] > 0 ? ", " + std::to_string(counts[2]) + " not implemented\n" : "\n");
        }
    }
    if (scoreDeviation) {
        std::cout << "press scores: largest relative deviation from kvpress " << *scoreDeviation << "\n";
    }
    std::cout << passed << " passed, " << results.size() - passed - notImplemented << " failed";
    if (notImplemented > 0) {
        std::cout << ", " << notImplemented << " not implemented";
    }
    std::cout << std::endl;
    bool recorded = true;
    if (!record.empty()) {
        const auto sessions =
            kvscope::cli::ConformanceRecorder(kvscope::cache::DeviceSupport::resolve(device))
                .recordDirectory(directory, record);
        for (const auto& failure : sessions.failures) {
            std::cout << "not recorded: " << failure << "\n";
        }
        std::cout << sessions.written.size() << " sessions recorded in " << record << std::endl;
        recorded = sessions.failures.empty();
    }
    return passed == results.size() && recorded ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    kvscope::config::OpenMpWaitPolicy::makePassive(argv);
    CLI::App app{"kvscope-cli: inspect, check and benchmark transformer KV caches"};
    app.require_subcommand(1);
    app.set_version_flag("--version", kvscope::config::BuildInfo::versionLine("kvscope-cli"),
                         "Print the version and the commit, then exit");

    std::string conformDirectory;
    kvscope::config::ComputeDevice conformDevice = kvscope::config::ComputeDevice::Cpu;
    CLI::App* conform = app.add_subcommand("conform", "Run golden conformance fixtures against the engine");
    conform->add_option("DIR", conformDirectory, "Directory of *.json fixtures")->required();
    OptionChecks::addEnum(*conform, "--device", conformDevice, &kvscope::config::computeDeviceFromString,
                          kvscope::config::allowedComputeDevices(), "Device");
    std::string conformRecord;
    conform->add_option("--record", conformRecord,
                        "Also write a session of each cache fixture into this directory");

    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    kvscope::cli::CacheBenchmarkOptions cacheOptions;
    CLI::App* benchCache = bench->add_subcommand("cache", "Time cache updates on the reference's decode workload");
    OptionChecks::addEnum(*benchCache, "--type", cacheOptions.type, &kvscope::cli::benchmarkedCacheFromString,
                          kvscope::cli::allowedBenchmarkedCaches(), "What to time");
    const CLI::Validator positive = OptionChecks::integerAtLeast(1);
    const CLI::Validator nonNegative = OptionChecks::integerAtLeast(0);
    benchCache->add_option("--layers", cacheOptions.layers)->check(positive);
    benchCache->add_option("--batch", cacheOptions.batch)->check(positive);
    benchCache->add_option("--heads", cacheOptions.heads)->check(positive);
    benchCache->add_option("--head-dim", cacheOptions.headDim)->check(positive);
    benchCache->add_option("--prefill", cacheOptions.prefill)->check(positive);
    benchCache->add_option("--steps", cacheOptions.steps)->check(nonNegative);
    benchCache->add_option("--window", cacheOptions.window)->check(positive);
    benchCache->add_option("--nbits", cacheOptions.nbits)->check(positive);
    benchCache->add_option("--group", cacheOptions.group)->check(positive);
    benchCache->add_option("--residual", cacheOptions.residual)->check(positive);
    benchCache->add_option("--threads", cacheOptions.threads)->check(positive);
    OptionChecks::addEnum(*benchCache, "--device", cacheOptions.device, &kvscope::config::computeDeviceFromString,
                          kvscope::config::allowedComputeDevices(), "Device");
    OptionChecks::addEnum(*benchCache, "--kernels", cacheOptions.kernels, &kvscope::cli::kernelsFromString,
                          kvscope::cli::allowedKernels(), "Min-max quantizer implementation");
    benchCache->add_flag("--record", cacheOptions.record, "attach a RecordingSink (events are counted in recorded_events)");
    benchCache->add_option("--transfer-gbps", cacheOptions.transferGBps)->check(OptionChecks::positiveNumber());
    benchCache->add_option("--transfer-latency-us", cacheOptions.transferLatencyUs)
        ->check(OptionChecks::numberAtLeast(0.0));

    CLI::App* presets = kvscope::cli::PresetsCommand::addSubcommand(app);
    CLI::App* presses = kvscope::cli::PressesCommand::addSubcommand(app);
    kvscope::cli::RunOptions runOptions;
    CLI::App* run = kvscope::cli::RunCommand::addSubcommand(app, runOptions);
    kvscope::cli::AttachCommand::Options attachOptions;
    CLI::App* attach = kvscope::cli::AttachCommand::addSubcommand(app, attachOptions);
    kvscope::cli::ServeOptions serveOptions;
    CLI::App* serve = kvscope::cli::ServeCommand::addSubcommand(app, serveOptions);
    kvscope::cli::FidelityOptions fidelityOptions;
    fidelityOptions.run.run.tokens = 128;
    CLI::App* fidelity = kvscope::cli::FidelityCommand::addSubcommand(app, fidelityOptions);
    kvscope::cli::SessionCommands::Options sessionOptions;
    kvscope::cli::SessionCommands::addSubcommands(app, sessionOptions);
    kvscope::cli::SyntheticCommand::Options syntheticOptions;
    CLI::App* syntheticCommand = kvscope::cli::SyntheticCommand::addSubcommand(app, syntheticOptions);
    kvscope::cli::TokenizeCommand::Options tokenizeOptions;
    const auto [tokenize, detokenize] = kvscope::cli::TokenizeCommand::addSubcommands(app, tokenizeOptions);
    kvscope::cli::TrainOptions trainOptions;
    CLI::App* train = kvscope::cli::TrainCommand::addSubcommand(app, trainOptions);

    kvscope::cli::PressBenchmarkOptions pressBenchmarkOptions;
    CLI::App* benchPress = kvscope::cli::PressBenchmark::addSubcommand(*bench, pressBenchmarkOptions);
    kvscope::cli::GemmBenchmarkOptions gemmOptions;
    CLI::App* benchGemm = kvscope::cli::GemmBenchmark::addSubcommand(*bench, gemmOptions);
    kvscope::cli::ModelBenchmarkOptions modelBenchmarkOptions;
    CLI::App* benchModel = kvscope::cli::ModelBenchmark::addSubcommand(*bench, modelBenchmarkOptions);

    int timelineLayers = 32;
    int64_t timelineTokens = 32768;
    CLI::App* benchTimeline =
        bench->add_subcommand("timeline", "Time StepState queries on a synthetic session of that size");
    benchTimeline->add_option("--layers", timelineLayers)->check(positive);
    benchTimeline->add_option("--tokens", timelineTokens)->check(positive);

    // Commands that draw no progress line take --no-progress too, so that scripts can pass it to any long
    // command.
    bool progressWanted = true;
    for (CLI::App* command : {conform, fidelity, syntheticCommand, benchCache, benchPress, benchGemm, benchModel,
                              benchTimeline}) {
        kvscope::cli::ProgressOutput::addFlag(*command, progressWanted);
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 2;
    }
    runOptions.progress = kvscope::cli::ProgressOutput::drawn(runOptions.progress);
    serveOptions.progress = kvscope::cli::ProgressOutput::drawn(serveOptions.progress);
    trainOptions.progress = kvscope::cli::ProgressOutput::drawn(trainOptions.progress);

    try {
        if (*conform) {
            return runConform(conformDirectory, conformDevice, conformRecord);
        }
        if (*presets) {
            return kvscope::cli::PresetsCommand::execute(std::cout);
        }
        if (*presses) {
            return kvscope::cli::PressesCommand::execute(std::cout);
        }
        if (*run) {
            return kvscope::cli::RunCommand::execute(runOptions, std::cout, std::cerr);
        }
        if (*serve) {
            return kvscope::cli::ServeCommand::execute(serveOptions, std::cout, std::cerr);
        }
        if (*attach) {
            return kvscope::cli::AttachCommand::execute(attachOptions, std::cout, std::cerr);
        }
        if (*fidelity) {
            return kvscope::cli::FidelityCommand::execute(fidelityOptions, std::cout);
        }
        if (*train) {
            return kvscope::cli::TrainCommand::execute(trainOptions, std::cout, std::cerr);
        }
        if (*syntheticCommand) {
            return kvscope::cli::SyntheticCommand::execute(syntheticOptions, std::cout, std::cerr);
        }
        if (*tokenize) {
            return kvscope::cli::TokenizeCommand::executeTokenize(tokenizeOptions, std::cout, std::cerr);
        }
        if (*detokenize) {
            return kvscope::cli::TokenizeCommand::executeDetokenize(tokenizeOptions, std::cout, std::cerr);
        }
        if (*app.get_subcommand("info")) {
            return kvscope::cli::SessionCommands::info(sessionOptions, std::cout, std::cerr);
        }
        if (*app.get_subcommand("replay")) {
            return kvscope::cli::SessionCommands::replay(sessionOptions, std::cout, std::cerr);
        }
        if (*app.get_subcommand("export")) {
            return kvscope::cli::SessionCommands::exportPerfetto(sessionOptions, std::cout, std::cerr);
        }
        if (*benchCache) {
            std::cout << kvscope::cli::CacheBenchmark::run(cacheOptions).dump() << std::endl;
            return 0;
        }
        if (*benchPress) {
            std::cout << kvscope::cli::PressBenchmark::run(pressBenchmarkOptions).dump() << std::endl;
            return 0;
        }
        if (*benchGemm) {
            std::cout << kvscope::cli::GemmBenchmark::run(gemmOptions).dump() << std::endl;
            return 0;
        }
        if (*benchModel) {
            std::cout << kvscope::cli::ModelBenchmark::run(modelBenchmarkOptions).dump() << std::endl;
            return 0;
        }
        if (*benchTimeline) {
            const auto result = kvscope::synthetic::TimelineBenchmark::run(timelineLayers, timelineTokens);
            std::cout << kvscope::synthetic::TimelineBenchmark::toJson(result) << std::endl;
            return 0;
        }
    } catch (const kvscope::cache::CacheError& error) {
        std::cerr << "kvscope-cli: " << error.what() << "\n";
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "kvscope-cli: " << error.what() << "\n";
        return 2;
    }
    return 2;
}
