// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/ParameterStore.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace kvscope::model {
class LanguageModel;
}

namespace kvscope::training {

class TextCorpus;

/// How a model is trained: AdamW on batches of bos + bytes windows, the learning rate warming up
/// linearly and then following a cosine down to `finalLearningRateFraction` of its peak.
struct TrainingOptions {
    int64_t steps = 1000;
    int64_t batch = 16;
    int64_t sequenceLength = 128;
    double learningRate = 3e-3;
    int64_t warmupSteps = 50;
    double finalLearningRateFraction = 0.1;
    double weightDecay = 0.1; ///< matrices only; norms and biases are not decayed
    int64_t evaluateEvery = 200; ///< held-out loss every this many steps (and after the last)
    int64_t heldOutWindows = 64; ///< held-out windows of sequenceLength bytes per evaluation
    uint64_t seed = 0;           ///< initial weights (the built-in ones of this seed) and batches
    /// Warm start: a .safetensors file (another preset's trained weights) whose tensors of the same name
    /// and shape replace the seeded ones. Empty: the seeded weights alone.
    std::filesystem::path initialWeights;
    /// Added to the copied RMSNorm weights: 1 when the file's model scales by w and this one by 1 + w
    /// (Gemma), -1 the other way round, so that a copied norm keeps its effect.
    double normWeightOffset = 0.0;

    /// Throws TrainingError naming the first option out of range and what is allowed.
    void validate() const;
};

/// One finished step as the trainer reports it.
struct TrainingStep {
    int64_t step = 0;  ///< 1-based
    double loss = 0.0; ///< training loss of this step's batch, nats per byte
    double learningRate = 0.0;
    std::optional<double> heldOutBitsPerByte; ///< set on evaluation steps
};

/// Trains a decoder-only built-in model (a preset's shape) with the engine's own full-sequence forward
/// and LibTorch autograd. Deterministic for a seed on one thread.
class ModelTrainer {
public:
    struct Result {
        int64_t steps = 0;           ///< steps completed
        bool interrupted = false;    ///< stopped by the stop flag before the last step
        bool diverged = false;       ///< stopped at a non-finite loss (weights are those before it)
        double heldOutBitsPerByte = 0.0; ///< of the weights as they stand after the last step
    };

    /// Refuses encoder-decoder models, bad options and initial weights that share no tensor with the
    /// model with a TrainingError.
    ModelTrainer(const config::ModelConfig& config, TrainingOptions options);
    ~ModelTrainer();

    /// How many tensors the initial weights gave (0 without a warm start).
    int64_t initializedTensors() const { return m_initializedTensors; }

    /// Runs the steps, calling `onStep` after each; checks `stop` (when given) before each step, so an
    /// interrupt keeps the weights of the last finished step.
    Result train(const TextCorpus& corpus, const std::function<void(const TrainingStep&)>& onStep,
                 const std::atomic<bool>* stop = nullptr);
    /// The weights as they stand (detached copies).
    model::ParameterStore parameters() const;
    /// The learning rate of 1-based `step` under `options`' schedule.
    static double learningRateAt(int64_t step, const TrainingOptions& options);
    /// Mean cross-entropy in bits per byte of `model` on the corpus's held-out windows.
    static double heldOutBitsPerByte(model::LanguageModel& model, const TextCorpus& corpus, int64_t sequenceLength,
                                     int64_t windows);
    /// Writes the weights as a .safetensors file in `dtype` (what the preset loader reads).
    void save(const std::filesystem::path& path, at::ScalarType dtype,
              const std::map<std::string, std::string>& metadata) const;

private:
    class Optimizer;

    config::ModelConfig m_config;
    TrainingOptions m_options;
    std::unique_ptr<model::LanguageModel> m_model;
    std::unique_ptr<Optimizer> m_optimizer;
    int64_t m_initializedTensors = 0;
};

} // namespace kvscope::training
