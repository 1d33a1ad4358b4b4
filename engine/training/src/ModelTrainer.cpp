// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/training/ModelTrainer.h"

#include "kvscope/model/Architecture.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsFile.h"
#include "kvscope/model/SafetensorsWriter.h"
#include "kvscope/training/TextCorpus.h"
#include "kvscope/training/TrainingError.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace kvscope::training {
namespace {

/// Mean next-byte cross-entropy (nats) of `model` on ids [batch, 1 + length].
at::Tensor nextTokenLoss(model::LanguageModel& model, const at::Tensor& ids) {
    const int64_t length = ids.size(1) - 1;
    at::Tensor logits = model.forward(ids.narrow(1, 0, length), nullptr);
    at::Tensor targets = ids.narrow(1, 1, length).reshape({-1});
    return at::nll_loss(at::log_softmax(logits.reshape({targets.size(0), -1}), -1), targets);
}

void require(bool holds, const std::string& what) {
    if (!holds) {
        throw TrainingError(what);
    }
}

} // namespace

void TrainingOptions::validate() const {
    require(steps >= 1, "--steps must be at least 1, got " + std::to_string(steps));
    require(batch >= 1, "--batch must be at least 1, got " + std::to_string(batch));
    require(sequenceLength >= 2, "--sequence-length must be at least 2, got " + std::to_string(sequenceLength));
    require(learningRate > 0.0, "--learning-rate must be greater than 0, got " + std::to_string(learningRate));
    require(warmupSteps >= 0, "--warmup must be at least 0, got " + std::to_string(warmupSteps));
    require(finalLearningRateFraction >= 0.0 && finalLearningRateFraction <= 1.0,
            "the final learning rate fraction must lie in [0, 1], got " + std::to_string(finalLearningRateFraction));
    require(weightDecay >= 0.0, "--weight-decay must be at least 0, got " + std::to_string(weightDecay));
    require(evaluateEvery >= 1, "--eval-every must be at least 1, got " + std::to_string(evaluateEvery));
    require(heldOutWindows >= 1, "--eval-windows must be at least 1, got " + std::to_string(heldOutWindows));
}

/// AdamW over the model's parameters in two groups: matrices with weight decay, vectors without.
class ModelTrainer::Optimizer {
public:
    Optimizer(const model::ParameterStore& parameters, const TrainingOptions& options) {
        std::vector<at::Tensor> decayed;
        std::vector<at::Tensor> plain;
        for (const auto& [name, tensor] : parameters.tensors()) {
            (tensor.dim() >= 2 ? decayed : plain).push_back(tensor);
        }
        auto settings = [&](double decay) {
            return std::make_unique<torch::optim::AdamWOptions>(
                torch::optim::AdamWOptions(options.learningRate).betas({0.9, 0.95}).weight_decay(decay));
        };
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(decayed, settings(options.weightDecay));
        groups.emplace_back(plain, settings(0.0));
        m_adamw = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(options.learningRate));
    }

    void step(double learningRate) {
        for (auto& group : m_adamw->param_groups()) {
            static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learningRate);
        }
        m_adamw->step();
    }
    void zeroGrad() { m_adamw->zero_grad(); }

private:
    std::unique_ptr<torch::optim::AdamW> m_adamw;
};

ModelTrainer::ModelTrainer(const config::ModelConfig& config, TrainingOptions options)
    : m_config(config), m_options(options) {
    m_options.validate();
    const model::Architecture architecture(config);
    if (architecture.isEncoderDecoder()) {
        throw TrainingError("model_type `" + config.modelType +
                            "` is an encoder-decoder, which training does not cover (it needs audio features); "
                            "train a decoder-only preset");
    }
    // The built-in weights of the seed are the starting point; requiring gradients makes the model's
    // forward record autograd history.
    model::ParameterStore parameters = model::ParameterStore::random(model::ModelLoader::parameterSpecs(architecture), options.seed);
    if (!m_options.initialWeights.empty()) {
        const model::SafetensorsFile file(m_options.initialWeights);
        const model::ParameterStore seededStore = parameters; // shares the tensors; set() below replaces entries
        for (const auto& [name, seeded] : seededStore.tensors()) {
            if (!file.contains(name) || file.tensor(name).sizes() != seeded.sizes()) {
                continue;
            }
            at::Tensor copied = file.tensor(name).to(at::kFloat).clone();
            if (name.ends_with("layernorm.weight") || name == "model.norm.weight") {
                copied += m_options.normWeightOffset;
            }
            parameters.set(name, copied);
            ++m_initializedTensors;
        }
        if (m_initializedTensors == 0) {
            throw TrainingError("the initial weights `" + m_options.initialWeights.string() +
                                "` share no tensor (same name and shape) with the model of `" + config.modelType + "`");
        }
    }
    for (const auto& [name, tensor] : parameters.tensors()) {
        tensor.requires_grad_(true);
    }
    m_model = model::ModelLoader::fromParameters(config, parameters);
    m_optimizer = std::make_unique<Optimizer>(m_model->parameters(), m_options);
}

ModelTrainer::~ModelTrainer() = default;

double ModelTrainer::learningRateAt(int64_t step, const TrainingOptions& options) {
    if (step <= options.warmupSteps) {
        return options.learningRate * static_cast<double>(step) / static_cast<double>(options.warmupSteps);
    }
    const int64_t decaySteps = std::max<int64_t>(1, options.steps - options.warmupSteps);
    const double progress = std::min(1.0, static_cast<double>(step - options.warmupSteps) / static_cast<double>(decaySteps));
    const double floor = options.finalLearningRateFraction;
    return options.learningRate * (floor + (1.0 - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

double ModelTrainer::heldOutBitsPerByte(model::LanguageModel& model, const TextCorpus& corpus, int64_t sequenceLength,
                                        int64_t windows) {
    at::NoGradGuard noGrad;
    const at::Tensor ids = corpus.heldOutBatch(sequenceLength, windows);
    return nextTokenLoss(model, ids).item<double>() / std::numbers::ln2;
}

ModelTrainer::Result ModelTrainer::train(const TextCorpus& corpus,
                                         const std::function<void(const TrainingStep&)>& onStep,
                                         const std::atomic<bool>* stop) {
    auto batches = at::make_generator<at::CPUGeneratorImpl>(m_options.seed);
    Result result;
    for (int64_t step = 1; step <= m_options.steps; ++step) {
        if (stop != nullptr && stop->load()) {
            result.interrupted = true;
            break;
        }
        const at::Tensor ids = corpus.sampleBatch(m_options.batch, m_options.sequenceLength, batches);
        m_optimizer->zeroGrad();
        at::Tensor loss = nextTokenLoss(*m_model, ids);
        const double lossValue = loss.item<double>();
        if (!std::isfinite(lossValue)) {
            result.diverged = true;
            break;
        }
        loss.backward();
        const double learningRate = learningRateAt(step, m_options);
        m_optimizer->step(learningRate);
        result.steps = step;
        TrainingStep report{step, lossValue, learningRate, std::nullopt};
        if (step % m_options.evaluateEvery == 0 || step == m_options.steps) {
            report.heldOutBitsPerByte = heldOutBitsPerByte(*m_model, corpus, m_options.sequenceLength, m_options.heldOutWindows);
        }
        if (onStep) {
            onStep(report);
        }
    }
    result.heldOutBitsPerByte = heldOutBitsPerByte(*m_model, corpus, m_options.sequenceLength, m_options.heldOutWindows);
    return result;
}

model::ParameterStore ModelTrainer::parameters() const {
    model::ParameterStore copy;
    for (const auto& [name, tensor] : m_model->parameters().tensors()) {
        copy.set(name, tensor.detach().clone());
    }
    return copy;
}

void ModelTrainer::save(const std::filesystem::path& path, at::ScalarType dtype,
                        const std::map<std::string, std::string>& metadata) const {
    model::SafetensorsWriter::writeFile(path, parameters().tensors(), dtype, metadata);
}

} // namespace kvscope::training
