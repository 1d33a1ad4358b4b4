// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ModelConfig.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufMetadata.h"
#include "kvscope/model/ParameterStore.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::model {

/// A llama.cpp GGUF file as a checkpoint: the config its metadata gives (as Transformers' GGUF loading maps
/// it) and its tensors under Hugging Face's names, dequantised to float32 exactly as gguf-py does or kept as
/// blocks, with the converter's Q/K row permutation of llama-family files undone.
class GgufCheckpoint {
public:
    /// Opens and checks the file; ModelError naming it when it is no GGUF file or its architecture is not one
    /// of architectures().
    explicit GgufCheckpoint(const std::filesystem::path& file);

    const gguf::GgufFile& file() const { return *m_file; }
    const config::ModelConfig& config() const { return m_config; }
    /// The tensors `specs` name: quantised matrices kept as the file's blocks when `packed` (PackedMatrix), else
    /// dequantised, and every F32/F16/BF16 tensor dequantised; a missing tensor, a wrong shape or a tensor no
    /// spec uses is refused, naming the GGUF tensor.
    ParameterStore parameters(const std::vector<ParameterSpec>& specs, bool packed = false) const;
    /// The chat template the file carries (`tokenizer.chat_template`), empty when none.
    std::string chatTemplate() const;

    /// The `general.architecture` values kvscope reads.
    static const char* architectures();
    /// The GGUF name of a Hugging Face parameter name in a file of `architecture`
    /// ("model.layers.3.self_attn.k_proj.weight" -> "blk.3.attn_k.weight"); empty when GGUF has no counterpart.
    static std::string ggufName(const std::string& architecture, const std::string& huggingFaceName);

private:
    /// Gemma 2/3's attention scale, layer types, soft-capping and local rotary base, as llama.cpp reads them.
    void readGemmaConfig(const gguf::GgufMetadata& meta, const std::string& prefix);

    std::shared_ptr<const gguf::GgufFile> m_file;
    std::string m_architecture;
    config::ModelConfig m_config;
};

} // namespace kvscope::model
