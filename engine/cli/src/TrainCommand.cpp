// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/TrainCommand.h"

#include "kvscope/cli/ProgressOutput.h"

#include "kvscope/cli/OptionChecks.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/Architecture.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsFile.h"
#include "kvscope/runtime/BlasLibrary.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/PresetCatalog.h"
#include "kvscope/training/TextCorpus.h"
#include "kvscope/training/TrainingError.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <ostream>

namespace kvscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> interruptRequested{false};

extern "C" void requestInterrupt(int) { interruptRequested.store(true); }

at::ScalarType dtypeOf(const std::string& name) {
    if (name == "f16") {
        return at::kHalf;
    }
    if (name == "bf16") {
        return at::kBFloat16;
    }
    if (name == "f32") {
        return at::kFloat;
    }
    throw training::TrainingError("--dtype `" + name + "` is not a weight dtype (allowed: " +
                                  TrainCommand::allowedDtypes() + ")");
}

void drawProgress(std::ostream& progress, const training::TrainingStep& step, int64_t total, double stepsPerSecond) {
    constexpr int64_t width = 30;
    const int64_t filled = step.step * width / total;
    progress << "\r[" << std::string(static_cast<size_t>(filled), '#') << std::string(static_cast<size_t>(width - filled), '.')
             << "] " << step.step << "/" << total << " steps, loss " << std::fixed << std::setprecision(3)
             << step.loss / std::log(2.0) << " bits/byte, " << std::setprecision(2) << stepsPerSecond << " steps/s"
             << std::defaultfloat << std::flush;
}

} // namespace

CLI::App* TrainCommand::addSubcommand(CLI::App& app, TrainOptions& options) {
    training::TrainingOptions& t = options.training;
    CLI::App* train = app.add_subcommand(
        "train", "Train a preset's built-in model on a text corpus; writes its weights (safetensors), JSON summary on stdout");
    train->add_option("--preset", options.preset, "Preset to train (kvscope-cli presets)")->required();
    train->add_option("--corpus", options.corpus, "Training text (bytes)")->required()->check(CLI::ExistingFile);
    train->add_option("--held-out", options.heldOut, "Held-out text (default: the last 5% of the corpus)")
        ->check(CLI::ExistingFile);
    train->add_option("--out", options.out, "Weights file to write (resources/presets/<preset>.safetensors to install)")
        ->required();
    train->add_option("--steps", t.steps, "Optimizer steps")->check(OptionChecks::integerAtLeast(1));
    train->add_option("--batch", t.batch, "Windows per step")->check(OptionChecks::integerAtLeast(1));
    train->add_option("--sequence-length", t.sequenceLength, "Bytes per window (after a bos)")
        ->check(OptionChecks::integerAtLeast(2));
    train->add_option("--learning-rate", t.learningRate, "Peak AdamW learning rate")->check(OptionChecks::positiveNumber());
    train->add_option("--warmup", t.warmupSteps, "Linear warm-up steps before the cosine decay")
        ->check(OptionChecks::integerAtLeast(0));
    train->add_option("--weight-decay", t.weightDecay, "AdamW weight decay of the matrices")
        ->check(OptionChecks::numberAtLeast(0.0));
    train->add_option("--eval-every", t.evaluateEvery, "Held-out loss every N steps")->check(OptionChecks::integerAtLeast(1));
    train->add_option("--eval-windows", t.heldOutWindows, "Held-out windows per evaluation")
        ->check(OptionChecks::integerAtLeast(1));
    train->add_option("--init", t.initialWeights,
                      "Start from these weights (another preset's .safetensors): tensors of the same name and shape")
        ->check(CLI::ExistingFile);
    train->add_option("--seed", t.seed, "Seed of the initial weights and of the batches")->check(OptionChecks::integerAtLeast(0));
    train->add_option("--threads", options.threads, "CPU threads (0: every core; 1 is deterministic)")
        ->check(OptionChecks::integerAtLeast(0));
    train->add_option("--dtype", options.dtype, std::string("Weight dtype of the file (") + allowedDtypes() + ")")
        ->check(CLI::IsMember({"f16", "bf16", "f32"}));
    ProgressOutput::addFlag(*train, options.progress);
    return train;
}

nlohmann::json TrainCommand::run(const TrainOptions& options, std::ostream& progress, const std::atomic<bool>* stop) {
    const at::ScalarType dtype = dtypeOf(options.dtype);
    const runtime::PresetCatalog catalog;
    const config::ModelConfig config = catalog.load(options.preset);
    const int threads = runtime::ComputeThreads::apply(options.threads);

    training::TrainingOptions trainingOptions = options.training;
    if (!trainingOptions.initialWeights.empty()) {
        // A warm start from another preset keeps each copied norm's effect across the w / 1 + w conventions.
        const model::SafetensorsFile initial(trainingOptions.initialWeights);
        const auto source = initial.metadata().find("kvscope_preset");
        if (source != initial.metadata().end() && catalog.contains(source->second)) {
            const bool sourceAddsOne = model::Architecture(catalog.load(source->second)).normAddsOne();
            const bool targetAddsOne = model::Architecture(config).normAddsOne();
            trainingOptions.normWeightOffset = (sourceAddsOne ? 1.0 : 0.0) - (targetAddsOne ? 1.0 : 0.0);
        }
    }
    // The model is checked (and refused: an encoder-decoder) before the corpus is read.
    training::ModelTrainer trainer(config, trainingOptions);
    const training::TextCorpus corpus = training::TextCorpus::fromFiles(options.corpus, options.heldOut);
    nlohmann::json evaluations = nlohmann::json::array();
    const auto start = Clock::now();
    const auto result = trainer.train(
        corpus,
        [&](const training::TrainingStep& step) {
            const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
            if (options.progress) {
                drawProgress(progress, step, options.training.steps, seconds > 0 ? static_cast<double>(step.step) / seconds : 0.0);
            }
            if (step.heldOutBitsPerByte) {
                evaluations.push_back({{"step", step.step}, {"held_out_bits_per_byte", *step.heldOutBitsPerByte}});
                if (options.progress) {
                    progress << "\nstep " << step.step << ": held-out " << std::fixed << std::setprecision(3)
                             << *step.heldOutBitsPerByte << " bits/byte" << std::defaultfloat << "\n"
                             << std::flush;
                }
            }
        },
        stop);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (options.progress) {
        progress << (result.interrupted ? "\ninterrupted: saving the weights of the last finished step\n" : "")
                 << (result.diverged ? "\nthe loss is no longer finite: saving the weights of the last finished step\n" : "")
                 << std::flush;
    }
    // The file's own record of how it was made, so that a checkpoint explains itself.
    char bitsPerByte[32];
    std::snprintf(bitsPerByte, sizeof(bitsPerByte), "%.4f", result.heldOutBitsPerByte);
    trainer.save(options.out, dtype,
                 {{"format", "pt"},
                  {"kvscope_preset", options.preset},
                  {"kvscope_steps", std::to_string(result.steps)},
                  {"kvscope_corpus", std::filesystem::path(options.corpus).filename().string()},
                  {"kvscope_initialized_from", trainingOptions.initialWeights.filename().string()},
                  {"kvscope_held_out_bits_per_byte", bitsPerByte}});
    // The held-out figure of the file as written: f16 rounds the weights.
    const auto written = model::ModelLoader::fromWeightsFile(config, options.out);
    const double writtenBitsPerByte = training::ModelTrainer::heldOutBitsPerByte(
        *written, corpus, options.training.sequenceLength, options.training.heldOutWindows);
    return {{"preset", options.preset},
            {"initialized_from", trainingOptions.initialWeights.filename().string()},
            {"initialized_tensors", trainer.initializedTensors()},
            {"steps", result.steps},
            {"interrupted", result.interrupted},
            {"diverged", result.diverged},
            {"held_out_bits_per_byte", result.heldOutBitsPerByte},
            {"held_out_bits_per_byte_as_written", writtenBitsPerByte},
            {"evaluations", evaluations},
            {"training_bytes", corpus.training().size()},
            {"held_out_bytes", corpus.heldOut().size()},
            {"seconds", seconds},
            {"steps_per_second", seconds > 0 ? static_cast<double>(result.steps) / seconds : 0.0},
            {"threads", threads},
            {"blas", runtime::BlasLibrary::loaded().toJson()},
            {"parameters", written->parameters().parameterCount()},
            {"dtype", options.dtype},
            {"out", options.out}};
}

int TrainCommand::execute(const TrainOptions& options, std::ostream& out, std::ostream& err) {
    interruptRequested.store(false);
    const auto previous = std::signal(SIGINT, requestInterrupt);
    nlohmann::json summary;
    try {
        summary = run(options, err, &interruptRequested);
    } catch (...) {
        std::signal(SIGINT, previous);
        throw;
    }
    std::signal(SIGINT, previous);
    out << summary.dump(2) << std::endl;
    return summary.at("diverged").get<bool>() ? 1 : 0;
}

} // namespace kvscope::cli
