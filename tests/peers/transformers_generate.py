"""Tiny random-initialised Transformers models, saved with save_pretrained, and what their generate() did.

    python transformers_generate.py OUT_DIR CASE...        (--list names the cases)

OUT_DIR/CASE receives the checkpoint exactly as the installed release writes it (config.json and
model.safetensors from `model.save_pretrained`) and generate.json: the prompt, the greedy tokens of
`model.generate()` on a DynamicCache built from the config, and at every step the next-token logits, each
layer's cached length, the mask sizes of the next one-token query and the keys and values each layer holds.
kvscope's TransformersGenerateTest loads the same checkpoint and must give the same, step by step.
"""
import json
import os
import sys
import warnings

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache, LogitsProcessor, LogitsProcessorList

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

BASE = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 260, "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6, "initializer_range": 0.2, "bos_token_id": None, "eos_token_id": None,
        "pad_token_id": None}

# model_type and what differs from BASE. Gemma 3's window (4) is shorter than the run, so its sliding layers
# drop tokens while its full layer keeps them all.
CASES = {
    "llama": {"model_type": "llama", "tie_word_embeddings": False},
    "llama-tied-llama3": {"model_type": "llama", "tie_word_embeddings": True,
                          "rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 64}},
    "qwen3": {"model_type": "qwen3", "tie_word_embeddings": True},
    "gemma3_text": {"model_type": "gemma3_text", "sliding_window": 4, "num_hidden_layers": 4,
                    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                    "query_pre_attn_scalar": 24, "hidden_activation": "gelu_pytorch_tanh"},
    # Linear attention (gated delta rule) beside gated full attention with a partial rotary (Qwen3NextConfig's
    # 0.25), sparse experts with a shared one on layers 0, 1 and 3, a plain MLP on layer 2.
    "qwen3_next": {"model_type": "qwen3_next", "num_hidden_layers": 4, "tie_word_embeddings": False,
                   "layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"],
                   "linear_conv_kernel_dim": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                   "linear_key_head_dim": 8, "linear_value_head_dim": 8, "num_experts": 4,
                   "num_experts_per_tok": 2, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
                   "mlp_only_layers": [2]},
}
PROMPT_TOKENS = 7
NEW_TOKENS = 10


class StepRecorder(LogitsProcessor):
    """Sees every step of generate(): the cache has taken the step's tokens when the logits come."""

    def __init__(self, cache, layers):
        self.cache, self.layers, self.steps = cache, layers, []

    def __call__(self, input_ids, scores):
        step = {"logits": scores[0].tolist(), "seq_length": [], "mask_sizes": [], "keys": [], "values": [],
                "conv_states": [], "recurrent_states": []}
        for layer in range(self.layers):
            held = self.cache.layers[layer]
            if hasattr(held, "conv_states"):
                # A linear-attention layer: the release tracks no length there (it refuses to say), only states.
                for name in ("seq_length", "mask_sizes", "keys", "values"):
                    step[name].append(None)
                step["conv_states"].append(tensor_json(held.conv_states[0]))
                step["recurrent_states"].append(tensor_json(held.recurrent_states[0]))
                continue
            step["seq_length"].append(int(self.cache.get_seq_length(layer)))
            step["mask_sizes"].append([int(x) for x in self.cache.get_mask_sizes(1, layer)])
            step["keys"].append(tensor_json(held.keys))
            step["values"].append(tensor_json(held.values))
            step["conv_states"].append(None)
            step["recurrent_states"].append(None)
        self.steps.append(step)
        return scores


def tensor_json(tensor):
    return {"shape": list(tensor.shape), "data": tensor.flatten().tolist()}


def write_case(case, out):
    settings = dict(BASE)
    settings.update(CASES[case])
    model_type = settings.pop("model_type")
    config = AutoConfig.for_model(model_type, **settings)
    torch.manual_seed(sum(map(ord, case)))
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        generator = torch.Generator().manual_seed(7)
        for name, parameter in model.named_parameters():
            if "norm" in name:
                # Near the identity with spread, so a norm kvscope dropped or misread shows in the logits.
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    folder = os.path.join(out, case)
    model.save_pretrained(folder)
    prompt = torch.randint(0, config.vocab_size, (1, PROMPT_TOKENS), generator=torch.Generator().manual_seed(3))
    cache = DynamicCache(config=config)
    recorder = StepRecorder(cache, config.num_hidden_layers)
    with torch.no_grad():
        output = model.generate(prompt, past_key_values=cache, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                do_sample=False, logits_processor=LogitsProcessorList([recorder]),
                                return_dict_in_generate=True)
    record = {"peer": f"transformers {transformers.__version__}, torch {torch.__version__}",
              "model_class": type(model).__name__, "prompt": prompt[0].tolist(),
              "tokens": output.sequences[0, PROMPT_TOKENS:].tolist(), "steps": recorder.steps}
    with open(os.path.join(folder, "generate.json"), "w") as f:
        json.dump(record, f, separators=(",", ":"))


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for case in sys.argv[2:]:
        if case not in CASES:
            sys.exit(f"unknown case `{case}` (cases: {', '.join(CASES)})")
        write_case(case, sys.argv[1])


if __name__ == "__main__":
    main()
