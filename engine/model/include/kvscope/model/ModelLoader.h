// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ComputeDevice.h"
#include "kvscope/config/GgufWeights.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/Architecture.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ParameterStore.h"

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::model {

/// Makes models: built-in weights drawn from a seed (no files, no download), given weights, or a
/// Hugging Face checkpoint folder (config.json + safetensors, memory-mapped), or a GGUF file.
class ModelLoader {
public:
    /// A Decoder or an EncoderDecoderModel with weights drawn from `seed`.
    static std::unique_ptr<LanguageModel> builtin(const config::ModelConfig& config, uint64_t seed = 0,
                                                  const at::Device& device = at::Device(at::kCPU));
    static std::unique_ptr<LanguageModel> fromParameters(const config::ModelConfig& config, ParameterStore parameters,
                                                         const at::Device& device = at::Device(at::kCPU));
    /// Loads a checkpoint of one of checkpointModelTypes() (f32, f16 or bf16; single or sharded).
    static std::unique_ptr<LanguageModel> fromCheckpoint(const std::filesystem::path& directory,
                                                         const at::Device& device = at::Device(at::kCPU));
    /// Loads a llama.cpp GGUF file of one of GgufCheckpoint::architectures(). Its quantised matrices stay the
    /// file's blocks (`weights` packed, on the CPU) or are widened to float32 (exactly as gguf-py and
    /// Transformers' `gguf_file=` loading dequantise them); either way they hold the same values.
    static std::unique_ptr<LanguageModel> fromGguf(const std::filesystem::path& file,
                                                   const at::Device& device = at::Device(at::kCPU),
                                                   config::GgufWeights weights = config::GgufWeights::Packed);
    /// `config`'s model with the weights of one .safetensors file (a preset's trained weights), read and
    /// checked exactly as a checkpoint's are.
    static std::unique_ptr<LanguageModel> fromWeightsFile(const config::ModelConfig& config,
                                                          const std::filesystem::path& weights,
                                                          const at::Device& device = at::Device(at::kCPU));
    /// The parameters the model for `architecture` has.
    static std::vector<ParameterSpec> parameterSpecs(const Architecture& architecture);
    /// The LibTorch device: cpu, or cuda where this LibTorch has CUDA and sees a GPU; otherwise a
    /// ModelError naming what is allowed here.
    static at::Device device(config::ComputeDevice device);
    /// The model types --checkpoint accepts.
    static const char* checkpointModelTypes();
};

} // namespace kvscope::model
