// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ModelLoader.h"

#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/config/ConfigError.h"
#include "kvscope/model/Decoder.h"
#include "kvscope/model/EncoderDecoderModel.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsCheckpoint.h"

#include <ATen/ATen.h>

namespace kvscope::model {

const char* ModelLoader::checkpointModelTypes() { return "llama, mistral, qwen2, gemma"; }

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
    if (type != "llama" && type != "mistral" && type != "qwen2" && type != "gemma") {
        throw ModelError("checkpoint `" + directory.string() + "` has model_type `" + type +
                         "`; kvscope loads checkpoints of these families: " + checkpointModelTypes());
    }
    Architecture architecture(config);
    ParameterStore parameters = ParameterStore::fromCheckpoint(parameterSpecs(architecture), checkpoint);
    return fromParameters(config, std::move(parameters), device);
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
