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
/// the converter (convert_hf_to_gguf's LlamaModel.permute); Qwen's are not. Gemma's sandwich norms have names of
/// their own, its converter stores norm weights plus one (Gemma's norms scale by 1 + w; llama.cpp's by w) and
/// leaves out what llama.cpp fills in itself (readGemmaConfig).
struct ArchitectureRow {
    const char* gguf;
    const char* modelType;
    bool permutesQueryKey;
    bool gemma;
};
constexpr ArchitectureRow kArchitectures[] = {
    {"llama", "llama", true, false},
    {"qwen2", "qwen2", false, false},
    {"qwen3", "qwen3", false, false},
    // Phi-3: fused qkv and gate/up projections, stored as they are (convert_hf_to_gguf's Phi3MiniModel).
    {"phi3", "phi3", false, false},
    {"gemma2", "gemma2", false, true},
    {"gemma3", "gemma3_text", false, true},
};

const ArchitectureRow* architectureRow(const std::string& name) {
    for (const ArchitectureRow& row : kArchitectures) {
        if (name == row.gguf) {
            return &row;
        }
    }
    return nullptr;
}

bool isGemma(const std::string& architecture) {
    const ArchitectureRow* row = architectureRow(architecture);
    return row != nullptr && row->gemma;
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

/// Gemma 2/3's sandwich norms: the attention's output and the MLP have a norm each side, and llama.cpp's
/// `ffn_norm` is the MLP's pre-norm there (gguf-py's tensor_mapping.py).
const std::map<std::string, std::string>& gemmaLayerNames() {
    static const std::map<std::string, std::string> names = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
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

const char* GgufCheckpoint::architectures() { return "llama, qwen2, qwen3, phi3, gemma2, gemma3"; }

std::string GgufCheckpoint::ggufName(const std::string& architecture, const std::string& name) {
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
        if (isGemma(architecture)) {
            if (auto it = gemmaLayerNames().find(match[2].str()); it != gemmaLayerNames().end()) {
                return "blk." + match[1].str() + "." + it->second;
            }
        }
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
        const uint64_t blocks = meta.unsignedValue(a + "block_count");
        // A bound before anything is sized by it (per-layer types, specs): no model has near this many layers.
        constexpr uint64_t maxBlocks = 1 << 16;
        if (blocks == 0 || blocks > maxBlocks) {
            throw ModelError("GGUF file `" + path.string() + "` says `" + a + "block_count` is " +
                             std::to_string(blocks) + "; a model has 1 to " + std::to_string(maxBlocks) +
                             " layers (a damaged or foreign file)");
        }
        c.numHiddenLayers = static_cast<int64_t>(blocks);
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
        if (row->gemma) {
            readGemmaConfig(meta, a);
        }
        c.maxPositionEmbeddings = static_cast<int64_t>(meta.optionalUnsigned(a + "context_length").value_or(4096));
        c.rmsNormEps = meta.number(a + "attention.layer_norm_rms_epsilon");
        c.ropeTheta = meta.optionalNumber(a + "rope.freq_base").value_or(10000.0);
        const auto tokens = meta.find("tokenizer.ggml.tokens");
        c.vocabSize = static_cast<int64_t>(meta.optionalUnsigned(a + "vocab_size").value_or(
            tokens ? tokens->asArray("tokenizer.ggml.tokens").size() : 0));
        if (!row->gemma) {
            c.hiddenAct = "silu";
        }
        c.tieWordEmbeddings = m_file->find("output.weight") == nullptr;
        if (const auto scaling = meta.optionalString(a + "rope.scaling.type"); scaling && *scaling == "linear") {
            config::RopeScaling linear;
            linear.type = "linear";
            linear.factor = meta.number(a + "rope.scaling.factor");
            c.ropeScaling = linear;
        } else if (scaling && *scaling != "none") {
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

void GgufCheckpoint::readGemmaConfig(const gguf::GgufMetadata& meta, const std::string& prefix) {
    config::ModelConfig& c = m_config;
    const bool gemma2 = m_architecture == "gemma2";
    // llama.cpp's rules where the file says nothing (llama-model.cpp): queries scaled by the head size, by
    // hidden_size / heads in the 27B models (46 and 62 layers), which are the checkpoints' query_pre_attn_scalar;
    // Gemma 2 alternates sliding and full layers, Gemma 3 has five sliding layers to one full one, whose rotary
    // base stays 10000 (Gemma3TextConfig's rope_local_base_freq).
    const bool is27B = c.numHiddenLayers == (gemma2 ? 46 : 62);
    c.queryPreAttnScalar = is27B ? static_cast<double>(c.hiddenSize / c.numAttentionHeads)
                                 : static_cast<double>(c.effectiveHeadDim());
    int64_t pattern = gemma2 ? 2 : 6;
    if (const auto given = meta.optionalUnsigned(prefix + "attention.sliding_window_pattern"); given && *given > 0) {
        pattern = static_cast<int64_t>(*given);
    }
    // Gemma 2 slides over 4096 tokens when the file says nothing; a Gemma 3 file without a window has none.
    const auto window = meta.optionalUnsigned(prefix + "attention.sliding_window");
    std::vector<std::string> types;
    for (int64_t layer = 0; layer < c.numHiddenLayers; ++layer) {
        const bool sliding = (gemma2 || (window && *window > 0)) && (layer + 1) % pattern != 0;
        types.push_back(sliding ? "sliding_attention" : "full_attention");
    }
    c.layerTypes = std::move(types);
    if (gemma2 || (window && *window > 0)) {
        c.slidingWindow = static_cast<int64_t>(window.value_or(4096));
    }
    if (gemma2) {
        // llama.cpp's defaults (Gemma2Config's) where the converter wrote none.
        c.attnLogitSoftcapping = meta.optionalNumber(prefix + "attn_logit_softcapping").value_or(50.0);
        c.finalLogitSoftcapping = meta.optionalNumber(prefix + "final_logit_softcapping").value_or(30.0);
    } else {
        c.ropeLocalBaseFreq = 10000.0;
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
        const std::string name = ggufName(m_architecture, spec.name);
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
        if (row->gemma && spec.name.ends_with("norm.weight")) {
            tensor -= 1.0;
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
