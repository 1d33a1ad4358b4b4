# SPDX-License-Identifier: GPL-3.0-or-later
"""Tiny random-initialised Transformers models written as GGUF files the way llama.cpp's converter writes
them (its tensor names and metadata keys; Llama's Q and K rows permuted for llama.cpp's RoPE), then loaded back
by Transformers itself (`gguf_file=`) as the oracle of kvscope's GGUF model mapping.

    python gguf_tiny_models.py OUT_DIR

OUT_DIR/CASE.gguf and OUT_DIR/CASE.json: the prompt ids, and the logits of every position of the model
Transformers loads from the GGUF file (float32 lists), for each case (llama in F32, llama with Q8_0 matrices,
qwen2 with biases, qwen3 with per-head q/k norms, phi3 with fused projections in F32 and Q4_0, gemma2 and
gemma3 with their norms stored plus one). The script first checks that Transformers' model from the GGUF
file gives the logits of the original model (F32 cases), so that the file is a faithful conversion.
"""
import json
import os
import sys
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")  # Transformers' GGUF loading draws a progress bar

import gguf
import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

BASE = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 96, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "initializer_range": 0.2, "tie_word_embeddings": False, "bos_token_id": None, "eos_token_id": None,
        "pad_token_id": None}
CASES = {
    "llama": ("llama", {"rope_theta": 10000.0}, gguf.GGMLQuantizationType.F32),
    "llama-q8_0": ("llama", {"tie_word_embeddings": True}, gguf.GGMLQuantizationType.Q8_0),
    "qwen2": ("qwen2", {"rope_theta": 1000000.0}, gguf.GGMLQuantizationType.F32),
    # Transformers' GGUF loading reads no head_dim for qwen3 (its default, 128, stands), so the tiny model has
    # 128; llama.cpp's converter writes it as attention.key_length, which kvscope reads.
    "qwen3": ("qwen3", {"head_dim": 128, "tie_word_embeddings": True}, gguf.GGMLQuantizationType.F32),
    # Fused qkv_proj and gate_up_proj, kept fused (attn_qkv, ffn_up); Q4_0 matrices (64-wide rows: two blocks).
    "phi3": ("phi3", {"rope_theta": 10000.0}, gguf.GGMLQuantizationType.F32),
    "phi3-q4_0": ("phi3", {"rope_theta": 10000.0}, gguf.GGMLQuantizationType.Q4_0),
    # Sandwich norms stored plus one, soft-capping, sliding layers of 4 tokens. head_dim 256, as in the real
    # models, where llama.cpp's attention scale (1/sqrt(head_dim)) is their query_pre_attn_scalar.
    "gemma2": ("gemma2", {"head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 4,
                          "tie_word_embeddings": True}, gguf.GGMLQuantizationType.F32),
    # Five sliding layers (a local rotary base) to one full one, q/k norms.
    "gemma3": ("gemma3_text", {"head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 4,
                                    "num_hidden_layers": 6, "rope_theta": 1000000.0, "tie_word_embeddings": True},
                    gguf.GGMLQuantizationType.F32),
}
GGUF_ARCHITECTURES = {"gemma3_text": "gemma3"}
PROMPT = [5, 17, 3, 44, 90, 12, 7, 61, 33, 2, 8]

LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight", "mlp.gate_up_proj.weight": "ffn_up.weight",
}
# Gemma's sandwich norms (gguf-py's tensor_mapping.py).
GEMMA_LAYER_NAMES = {
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}


def permute(weights, heads):
    """convert_hf_to_gguf's LlamaModel.permute: interleaves each head's rotary halves."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(
        weights.shape)


def gguf_name(name, arch):
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return "output.weight"
    parts = name.split(".")
    rest = ".".join(parts[3:])
    if arch.startswith("gemma") and rest in GEMMA_LAYER_NAMES:
        return f"blk.{parts[2]}." + GEMMA_LAYER_NAMES[rest]
    return f"blk.{parts[2]}." + LAYER_NAMES[rest]


def write_gguf(path, arch, config, model, matrix_type):
    writer = gguf.GGUFWriter(path, arch)
    writer.add_name(f"tiny {arch}")
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    # Gemma 3 keeps one rotary table per layer type; the file carries the full layers' base.
    rope = config.rope_parameters.get("full_attention", config.rope_parameters)
    writer.add_rope_freq_base(float(rope["rope_theta"]))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    writer.add_rope_dimension_count(head_dim)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_vocab_size(config.vocab_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(config.vocab_size)])
    writer.add_token_types([1] * config.vocab_size)
    writer.add_token_merges([])
    if arch == "phi3":
        # Phi3Config's default pad_token_id (32000) lies outside the tiny vocabulary; Transformers takes the
        # file's instead.
        writer.add_pad_token_id(0)
    if arch == "gemma2":
        writer.add_attn_logit_softcapping(config.attn_logit_softcapping)
        writer.add_final_logit_softcapping(config.final_logit_softcapping)
    if arch.startswith("gemma"):
        writer.add_sliding_window(config.sliding_window)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        data = tensor.detach().to(torch.float32).numpy()
        if arch == "llama" and name.endswith("q_proj.weight"):
            data = permute(data, config.num_attention_heads)
        elif arch == "llama" and name.endswith("k_proj.weight"):
            data = permute(data, config.num_key_value_heads)
        elif arch.startswith("gemma") and name.endswith("norm.weight"):
            data = data + 1  # convert_hf_to_gguf's Gemma2Model/Gemma3Model: llama.cpp's norms scale by w
        if data.ndim == 2 and matrix_type != gguf.GGMLQuantizationType.F32:
            writer.add_tensor(gguf_name(name, arch), gguf.quants.quantize(data, matrix_type), raw_dtype=matrix_type)
        else:
            writer.add_tensor(gguf_name(name, arch), np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for case, (arch, overrides, matrix_type) in CASES.items():
        torch.manual_seed(0)
        config = AutoConfig.for_model(arch, **{**BASE, **overrides})
        # Eager attention: Transformers' default SDPA drops Gemma 2's attention soft-capping without a word
        # (kvscope, llama.cpp and the checkpoint's own eager attention apply it).
        original = AutoModelForCausalLM.from_config(config, attn_implementation="eager").to(torch.float32).eval()
        path = os.path.join(out, case + ".gguf")
        write_gguf(path, GGUF_ARCHITECTURES.get(arch, arch), config, original, matrix_type)
        loaded = AutoModelForCausalLM.from_pretrained(out, gguf_file=case + ".gguf", dtype=torch.float32,
                                                      attn_implementation="eager").eval()
        ids = torch.tensor([PROMPT])
        with torch.no_grad():
            logits = loaded(ids).logits[0]
            if matrix_type == gguf.GGMLQuantizationType.F32:
                reference = original(ids).logits[0]
                drift = (logits - reference).abs().max().item()
                if drift > 1e-5:
                    sys.exit(f"gguf_tiny_models.py: {case}: Transformers' model from the GGUF file differs from the "
                             f"original by {drift}: the conversion is wrong")
        with open(os.path.join(out, case + ".json"), "w") as f:
            json.dump({"peer": f"transformers {transformers.__version__} (gguf_file=)", "prompt": PROMPT,
                       "logits": logits.tolist()}, f)


if __name__ == "__main__":
    main()
