// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/GgufCheckpoint.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufError.h"
#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>

#include <map>
#include <regex>
#include <set>

namespace kvscope::model {

namespace {

/// The architectures read and the Hugging Face model type each becomes. llama's Q and K rows are permuted by
/// the converter (convert_hf_to_gguf's LlamaModel.permute); Qwen's are not.
struct ArchitectureRow {
    const char* gguf;
    const char* modelType;
    bool permutesQueryKey;
};
constexpr ArchitectureRow kArchitectures[] = {
    {"llama", "llama", true},
    {"qwen2", "qwen2", false},
    {"qwen3", "qwen3", false},
    // Phi-3: fused qkv and gate/up projections, stored as they are (convert_hf_to_gguf's Phi3MiniModel).
    {"phi3", "phi3", false},
};

const ArchitectureRow* architectureRow(const std::string& name) {
    for (const ArchitectureRow& row : kArchitectures) {
        if (name == row.gguf) {
            return &row;
        }
    }
    return nullptr;
}

/// Hugging Face's per-layer names and GGUF's (llama.cpp's tensor names, gguf-py's tensor_mapping.py).
const std::map<std::string, std::string>& layerNames() {
    static const std::map<std::string, std::string> names = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
        {"mlp.gate_up_proj.weight", "ffn_up.weight"},
    };
    return names;
}

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

/// GGUF row 2i+s of each head holds Hugging Face row s*d/2+i (the converter interleaves the rotary halves
/// for llama.cpp's adjacent-pair RoPE); this puts the halves back.
at::Tensor unpermuted(const at::Tensor& rows, int64_t heads) {
    const int64_t headDim = rows.size(0) / heads;
    std::vector<int64_t> split = {heads, headDim / 2, 2};
    for (int64_t d = 1; d < rows.dim(); ++d) {
        split.push_back(rows.size(d));
    }
    return rows.reshape(split).transpose(1, 2).reshape(rows.sizes()).contiguous();
}

/// unpermuted()'s row order: Hugging Face row r of a head is GGUF row rowOrder[r].
std::vector<int64_t> unpermutedRows(int64_t rows, int64_t heads) {
    const at::Tensor order = unpermuted(at::arange(rows, at::kLong), heads);
    const int64_t* data = order.data_ptr<int64_t>();
    return {data, data + rows};
}

} // namespace

const char* GgufCheckpoint::architectures() { return "llama, qwen2, qwen3, phi3"; }

std::string GgufCheckpoint::ggufName(const std::string& name) {
    if (name == "model.embed_tokens.weight") {
        return "token_embd.weight";
    }
    if (name == "model.norm.weight") {
        return "output_norm.weight";
    }
    if (name == "lm_head.weight") {
        return "output.weight";
    }
    static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
    std::smatch match;
    if (std::regex_match(name, match, layer)) {
        auto it = layerNames().find(match[2].str());
        if (it != layerNames().end()) {
            return "blk." + match[1].str() + "." + it->second;
        }
    }
    return {};
}

GgufCheckpoint::GgufCheckpoint(const std::filesystem::path& path) {
    try {
        m_file = std::make_shared<const gguf::GgufFile>(path);
        const gguf::GgufMetadata& meta = m_file->metadata();
        m_architecture = meta.string("general.architecture");
        const ArchitectureRow* row = architectureRow(m_architecture);
        if (row == nullptr) {
            throw ModelError("GGUF file `" + path.string() + "` holds a `" + m_architecture +
                             "` model; kvscope reads GGUF models of these architectures: " + architectures());
        }
        const std::string a = m_architecture + ".";
        config::ModelConfig& c = m_config;
        c.modelType = row->modelType;
        c.numHiddenLayers = static_cast<int64_t>(meta.unsignedValue(a + "block_count"));
        c.hiddenSize = static_cast<int64_t>(meta.unsignedValue(a + "embedding_length"));
        c.intermediateSize = static_cast<int64_t>(meta.unsignedValue(a + "feed_forward_length"));
        c.numAttentionHeads = static_cast<int64_t>(meta.unsignedValue(a + "attention.head_count"));
        c.numKeyValueHeads =
            static_cast<int64_t>(meta.optionalUnsigned(a + "attention.head_count_kv").value_or(c.numAttentionHeads));
        const auto ropeDims = meta.optionalUnsigned(a + "rope.dimension_count");
        if (const auto keyLength = meta.optionalUnsigned(a + "attention.key_length")) {
            c.headDim = static_cast<int64_t>(*keyLength);
        } else if (ropeDims && m_architecture != "phi3") {
            c.headDim = static_cast<int64_t>(*ropeDims);
        }
        if (m_architecture == "phi3") {
            // Phi-3 rotates rope.dimension_count channels of each head (Phi-4-mini: 3/4 of them), as llama.cpp
            // reads it; a sliding window of 0 is none.
            const int64_t headDim = c.headDim.value_or(c.hiddenSize / c.numAttentionHeads);
            if (ropeDims && static_cast<int64_t>(*ropeDims) != headDim) {
                c.partialRotaryFactor = static_cast<double>(*ropeDims) / static_cast<double>(headDim);
            }
            if (const auto window = meta.optionalUnsigned(a + "attention.sliding_window"); window && *window > 0) {
                c.slidingWindow = static_cast<int64_t>(*window);
            }
            if (m_file->find("rope_factors_long.weight") != nullptr) {
                throw ModelError("GGUF file `" + path.string() + "` carries `rope_factors_long.weight` (Phi-3's "
                                 "LongRoPE for 128k contexts), which kvscope does not read from GGUF yet");
            }
        }
        c.maxPositionEmbeddings = static_cast<int64_t>(meta.optionalUnsigned(a + "context_length").value_or(4096));
        c.rmsNormEps = meta.number(a + "attention.layer_norm_rms_epsilon");
        c.ropeTheta = meta.optionalNumber(a + "rope.freq_base").value_or(10000.0);
        const auto tokens = meta.find("tokenizer.ggml.tokens");
        c.vocabSize = static_cast<int64_t>(meta.optionalUnsigned(a + "vocab_size").value_or(
            tokens ? tokens->asArray("tokenizer.ggml.tokens").size() : 0));
        c.hiddenAct = "silu";
        c.tieWordEmbeddings = m_file->find("output.weight") == nullptr;
        if (const auto scaling = meta.optionalString(a + "rope.scaling.type"); scaling && *scaling != "none") {
            throw ModelError("GGUF file `" + path.string() + "` scales its rotary frequencies (`" + a +
                             "rope.scaling.type` is `" + *scaling + "`), which kvscope does not read from GGUF yet");
        }
        if (m_file->find("rope_freqs.weight") != nullptr) {
            throw ModelError("GGUF file `" + path.string() + "` carries `rope_freqs.weight` (Llama 3.1-style rotary "
                             "scaling), which kvscope does not read from GGUF yet");
        }
    } catch (const gguf::GgufError& error) {
        throw ModelError(error.what());
    }
}

std::string GgufCheckpoint::chatTemplate() const {
    return m_file->metadata().optionalString("tokenizer.chat_template").value_or("");
}

ParameterStore GgufCheckpoint::parameters(const std::vector<ParameterSpec>& specs, bool packed) const {
    const ArchitectureRow* row = architectureRow(m_architecture);
    ParameterStore store;
    std::set<std::string> used;
    for (const ParameterSpec& spec : specs) {
        if (spec.name == "lm_head.weight" && !m_file->find("output.weight")) {
            continue; // tied to the embedding
        }
        const std::string name = ggufName(spec.name);
        const gguf::GgufTensorInfo* info = name.empty() ? nullptr : m_file->find(name);
        if (info == nullptr) {
            throw ModelError("GGUF file `" + m_file->name() + "` lacks tensor `" + (name.empty() ? spec.name : name) +
                             "`, which its " + m_architecture + " model needs (for `" + spec.name + "`)");
        }
        if (info->shape() != spec.shape) {
            throw ModelError("GGUF tensor `" + name + "` of `" + m_file->name() + "` has shape " +
                             shapeText(info->shape()) + " but the file's metadata makes " + shapeText(spec.shape));
        }
        const bool permuted = row->permutesQueryKey && (spec.name.ends_with("q_proj.weight") ||
                                                         spec.name.ends_with("k_proj.weight"));
        const gguf::BlockType* type = gguf::BlockType::find(info->type.id);
        if (packed && spec.shape.size() == 2 && type != nullptr && type->blockSize() > 1) {
            const int64_t heads = spec.name.ends_with("q_proj.weight") ? m_config.numAttentionHeads
                                                                        : m_config.numKeyValueHeads;
            store.setPacked(spec.name, PackedMatrix(m_file, *info, permuted ? unpermutedRows(spec.shape[0], heads)
                                                                            : std::vector<int64_t>{}));
            used.insert(name);
            continue;
        }
        at::Tensor tensor = at::empty(spec.shape, at::kFloat);
        try {
            m_file->dequantize(*info, tensor.data_ptr<float>());
        } catch (const gguf::GgufError& error) {
            throw ModelError(error.what());
        }
        if (row->permutesQueryKey && (spec.name.ends_with("q_proj.weight") || spec.name.ends_with("q_proj.bias"))) {
            tensor = unpermuted(tensor, m_config.numAttentionHeads);
        } else if (row->permutesQueryKey &&
                   (spec.name.ends_with("k_proj.weight") || spec.name.ends_with("k_proj.bias"))) {
            tensor = unpermuted(tensor, m_config.numKeyValueHeads);
        }
        store.set(spec.name, tensor);
        used.insert(name);
    }
    std::vector<std::string> unused;
    for (const auto& info : m_file->tensors()) {
        if (!used.count(info.name)) {
            unused.push_back(info.name);
        }
    }
    if (!unused.empty()) {
        std::string names;
        for (size_t i = 0; i < unused.size() && i < 5; ++i) {
            names += (i ? ", `" : "`") + unused[i] + "`";
        }
        throw ModelError("GGUF file `" + m_file->name() + "` holds " + std::to_string(unused.size()) +
                         " tensor(s) its " + m_architecture + " model does not use: " + names +
                         (unused.size() > 5 ? ", ..." : "") + " (kvscope refuses rather than ignore weights)");
    }
    return store;
}

} // namespace kvscope::model
