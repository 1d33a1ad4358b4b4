# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes small random Hugging Face checkpoints of family cases and the reference's logits.

    python3 write_checkpoint.py OUT_DIR CASE...

OUT_DIR/CASE receives config.json, model.safetensors (tensors under the family's Hugging Face
names, float32) and reference.json ({"input_ids": [[...]], "logits": [[[...]]]}), the logits of
hf_families.forward. `python3 write_checkpoint.py --list` names the cases. One call writes many
cases, so that torch is imported once.
"""

import json
import os
import struct
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree the tests run from
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_families  # noqa: E402

BASE = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 260, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "max_position_embeddings": 256}

# Each case sets what its family's checkpoints carry, with values chosen to make every feature
# move the logits: a window shorter than the prompt, softcaps the scores reach, a local rotary base
# far from the global one, rope scalings whose frequencies fall in every llama3 band.
CASES = {
    "llama-llama3-tied": {"model_type": "llama", "tie_word_embeddings": True,
                          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
    "mistral-linear": {"model_type": "mistral", "sliding_window": 5,
                       "rope_scaling": {"type": "linear", "factor": 4.0}},
    "qwen2-tied": {"model_type": "qwen2", "tie_word_embeddings": True, "use_sliding_window": False,
                   "sliding_window": 4096},
    "qwen3": {"model_type": "qwen3", "tie_word_embeddings": True, "use_sliding_window": False,
              "sliding_window": None, "attention_bias": False, "hidden_act": "silu"},
    "qwen3-untied-sliding": {"model_type": "qwen3", "tie_word_embeddings": False, "use_sliding_window": True,
                             "sliding_window": 4, "max_window_layers": 1},
    "gemma": {"model_type": "gemma", "hidden_activation": "gelu_pytorch_tanh", "num_key_value_heads": 1},
    "gemma2": {"model_type": "gemma2", "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4,
               "query_pre_attn_scalar": 24, "attn_logit_softcapping": 2.0, "final_logit_softcapping": 5.0,
               "num_hidden_layers": 4},
    "gemma3_text": {"model_type": "gemma3_text", "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4,
                    "sliding_window_pattern": 2, "query_pre_attn_scalar": 24, "rope_local_base_freq": 100.0,
                    "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "num_hidden_layers": 4,
                    "final_logit_softcapping": None, "attn_logit_softcapping": None},
    "phi3": {"model_type": "phi3", "hidden_act": "silu", "sliding_window": 6, "partial_rotary_factor": 0.75,
             "tie_word_embeddings": False, "rope_scaling": None},
}


def config_of(case):
    config = dict(BASE)
    config.update(CASES[case])
    return config


def tensor_shapes(config):
    """Every tensor of the family under its Hugging Face name, and whether it is a norm weight."""
    family = hf_families.Family(config)
    hidden = config["hidden_size"]
    inner = config["intermediate_size"]
    q_width = family.heads * family.head_dim
    kv_width = family.kv_heads * family.head_dim
    shapes = {"model.embed_tokens.weight": ([config["vocab_size"], hidden], False),
              "model.norm.weight": ([hidden], True)}
    if not family.tied:
        shapes["lm_head.weight"] = ([config["vocab_size"], hidden], False)
    for layer in range(family.layers):
        p = "model.layers.%d." % layer
        shapes[p + "input_layernorm.weight"] = ([hidden], True)
        shapes[p + "post_attention_layernorm.weight"] = ([hidden], True)
        if family.sandwich:
            shapes[p + "pre_feedforward_layernorm.weight"] = ([hidden], True)
            shapes[p + "post_feedforward_layernorm.weight"] = ([hidden], True)
        a = p + "self_attn."
        if family.fused:
            shapes[a + "qkv_proj.weight"] = ([q_width + 2 * kv_width, hidden], False)
        else:
            shapes[a + "q_proj.weight"] = ([q_width, hidden], False)
            shapes[a + "k_proj.weight"] = ([kv_width, hidden], False)
            shapes[a + "v_proj.weight"] = ([kv_width, hidden], False)
            if family.qkv_bias:
                shapes[a + "q_proj.bias"] = ([q_width], False)
                shapes[a + "k_proj.bias"] = ([kv_width], False)
                shapes[a + "v_proj.bias"] = ([kv_width], False)
        shapes[a + "o_proj.weight"] = ([hidden, q_width], False)
        if family.qk_norm:
            shapes[a + "q_norm.weight"] = ([family.head_dim], True)
            shapes[a + "k_norm.weight"] = ([family.head_dim], True)
        m = p + "mlp."
        if family.fused:
            shapes[m + "gate_up_proj.weight"] = ([2 * inner, hidden], False)
        else:
            shapes[m + "gate_proj.weight"] = ([inner, hidden], False)
            shapes[m + "up_proj.weight"] = ([inner, hidden], False)
        shapes[m + "down_proj.weight"] = ([hidden, inner], False)
    return shapes


def random_weights(config, seed):
    family = hf_families.Family(config)
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, (shape, is_norm) in sorted(tensor_shapes(config).items()):
        noise = torch.randn(shape, generator=generator)
        if is_norm:
            # Near the identity (1, or 0 under Gemma's 1 + w) with spread, so a dropped norm shows.
            weights[name] = (0.0 if family.gemma else 1.0) + 0.3 * noise
        elif name.endswith(".bias"):
            weights[name] = 0.3 * noise
        else:
            weights[name] = noise / shape[-1] ** 0.5 * (1.0 if name == "model.embed_tokens.weight" else 2.0)
    return weights


def write_safetensors(path, tensors):
    """The safetensors layout by hand: 8-byte little-endian header length, JSON header, raw data."""
    header = {"__metadata__": {"format": "pt"}}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        data = tensors[name].contiguous().to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode("utf-8")
    encoded += b" " * ((8 - len(encoded) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
        for chunk in chunks:
            out.write(chunk)


def write_case(case, out):
    config = config_of(case)
    weights = random_weights(config, seed=sorted(CASES).index(case) + 1)
    generator = torch.Generator().manual_seed(99)
    input_ids = torch.randint(0, config["vocab_size"], (1, 11), generator=generator)
    with torch.no_grad():
        logits = hf_families.forward(config, weights, input_ids)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as handle:
        json.dump(config, handle, indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), weights)
    with open(os.path.join(out, "reference.json"), "w") as handle:
        json.dump({"input_ids": input_ids.tolist(), "logits": logits.tolist()}, handle)


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    unknown = [case for case in argv[2:] if case not in CASES]
    if len(argv) < 3 or unknown:
        sys.stderr.write("usage: write_checkpoint.py OUT_DIR CASE... (cases: %s)\n" % ", ".join(CASES))
        return 2
    for case in argv[2:]:
        write_case(case, os.path.join(argv[1], case))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
