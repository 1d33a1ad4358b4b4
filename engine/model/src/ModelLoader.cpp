// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ModelLoader.h"

#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/config/ConfigError.h"
#include "kvscope/model/Decoder.h"
#include "kvscope/model/EncoderDecoderModel.h"
#include "kvscope/model/GgufCheckpoint.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsCheckpoint.h"

#include <ATen/ATen.h>
#include <set>

namespace kvscope::model {

const char* ModelLoader::checkpointModelTypes() {
    return "llama, mistral, qwen2, qwen3, qwen3_next, gemma, gemma2, gemma3_text, phi3";
}

std::vector<ParameterSpec> ModelLoader::parameterSpecs(const Architecture& architecture) {
    return architecture.isEncoderDecoder() ? EncoderDecoderModel::parameterSpecs(architecture)
                                           : Decoder::parameterSpecs(architecture);
}

std::unique_ptr<LanguageModel> ModelLoader::builtin(const config::ModelConfig& config, uint64_t seed,
                                                    const at::Device& device) {
    Architecture architecture(config);
    ParameterStore parameters = ParameterStore::random(parameterSpecs(architecture), seed);
    return fromParameters(config, std::move(parameters), device);
}

std::unique_ptr<LanguageModel> ModelLoader::fromParameters(const config::ModelConfig& config, ParameterStore parameters,
                                                           const at::Device& device) {
    Architecture architecture(config);
    if (!parameters.tensors().empty() && parameters.tensors().begin()->second.device() != device) {
        parameters = parameters.to(device);
    }
    if (architecture.isEncoderDecoder()) {
        return std::make_unique<EncoderDecoderModel>(std::move(architecture), std::move(parameters));
    }
    return std::make_unique<Decoder>(std::move(architecture), std::move(parameters));
}

std::unique_ptr<LanguageModel> ModelLoader::fromCheckpoint(const std::filesystem::path& directory,
                                                           const at::Device& device) {
    SafetensorsCheckpoint checkpoint(directory);
    config::ModelConfig config;
    try {
        config = config::ModelConfig::fromFile(checkpoint.configPath());
    } catch (const config::ConfigError& error) {
        throw ModelError(std::string("checkpoint `") + directory.string() + "`: " + error.what());
    }
    const std::string& type = config.modelType;
    static const std::set<std::string> loadable = {"llama", "mistral", "qwen2",       "qwen3", "qwen3_next",
                                                   "gemma", "gemma2",  "gemma3_text", "phi3"};
    if (!loadable.count(type)) {
        throw ModelError("checkpoint `" + directory.string() + "` has model_type `" + type +
                         "`; kvscope loads checkpoints of these families: " + checkpointModelTypes());
    }
    Architecture architecture(config);
    std::set<std::string> ignored;
    if (architecture.tiedEmbeddings()) {
        // Transformers ties the output layer to the embedding, whatever a stored lm_head holds.
        ignored.insert("lm_head.weight");
    } else if (!checkpoint.contains("lm_head.weight")) {
        throw ModelError("checkpoint `" + directory.string() +
                         "` has no `lm_head.weight` but its config unties the "
                         "output layer from the embedding (tie_word_embeddings is " +
                         (config.tieWordEmbeddings ? "false" : "absent, and false by default for " + type) +
                         "); set tie_word_embeddings to true if the output layer is the embedding");
    }
    ParameterStore parameters =
        ParameterStore::fromCheckpoint(parameterSpecs(architecture), checkpoint, ignored);
    return fromParameters(config, std::move(parameters), device);
}

std::unique_ptr<LanguageModel> ModelLoader::fromGguf(const std::filesystem::path& file, const at::Device& device,
                                                     config::GgufWeights weights) {
    const GgufCheckpoint checkpoint(file);
    // Packed blocks are multiplied on the CPU; another device gets them widened.
    const bool packed = weights == config::GgufWeights::Packed && device.is_cpu();
    ParameterStore parameters = checkpoint.parameters(parameterSpecs(Architecture(checkpoint.config())), packed);
    return fromParameters(checkpoint.config(), std::move(parameters), device);
}

std::unique_ptr<LanguageModel> ModelLoader::fromWeightsFile(const config::ModelConfig& config,
                                                             const std::filesystem::path& weights,
                                                             const at::Device& device) {
    const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::singleFile(weights);
    ParameterStore parameters = ParameterStore::fromCheckpoint(parameterSpecs(Architecture(config)), checkpoint);
    return fromParameters(config, std::move(parameters), device);
}

at::Device ModelLoader::device(config::ComputeDevice device) {
    // A ModelError (the model's refusal), then the one mapping to a LibTorch device.
    if (const std::string why = cache::DeviceSupport::refusal(device); !why.empty()) {
        throw ModelError(why);
    }
    return cache::DeviceSupport::resolve(device);
}

} // namespace kvscope::model
