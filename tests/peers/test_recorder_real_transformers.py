# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python recorder (python/kvscope) on the installed Transformers release: real `model.generate()` of tiny
random Llama, Mistral (sliding window), Gemma 3 (sliding and full layers) and Bart (encoder-decoder) models
with the cache classes Transformers offers. Each recorded session must replay (`kvscope-cli replay`) to the
lengths and mask sizes Transformers' own cache reported at every step, and recording must change no token.

Run by ctest (`peers_python_recorder`) with the peers' Python: KVSCOPE_CLI names the CLI.
"""
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
import transformers
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, DynamicCache, EncoderDecoderCache,
                          LogitsProcessor, LogitsProcessorList, QuantizedCache, StaticCache)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kvscope  # noqa: E402

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
CLI = os.environ.get("KVSCOPE_CLI", os.path.join(ROOT, "build", "dev", "engine", "cli", "kvscope-cli"))
NEW_TOKENS = 6
SMALL = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 260, "initializer_range": 0.2,
         "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def decoder(model_type, **settings):
    config = AutoConfig.for_model(model_type, **{**SMALL, **settings})
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval()


def bart():
    config = AutoConfig.for_model("bart", d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                  decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, vocab_size=260,
                                  max_position_embeddings=64, init_std=0.2, forced_bos_token_id=None,
                                  forced_eos_token_id=None, eos_token_id=None, bos_token_id=None, pad_token_id=1,
                                  decoder_start_token_id=2)
    torch.manual_seed(0)
    return AutoModelForSeq2SeqLM.from_config(config).eval()


class CacheProbe(LogitsProcessor):
    """After every forward of generate(): each decoder layer's length and the next one-token query's mask sizes."""

    def __init__(self, cache, layers):
        self.cache, self.layers, self.steps = cache, layers, []

    def __call__(self, input_ids, scores):
        cache = self.cache.self_attention_cache if isinstance(self.cache, EncoderDecoderCache) else self.cache
        self.steps.append([(int(cache.get_seq_length(layer)), tuple(int(x) for x in cache.get_mask_sizes(1, layer)))
                           for layer in range(self.layers)])
        return scores


def generate(model, cache, probe=None):
    prompt = torch.tensor([[5, 17, 99, 3, 42, 7, 150]])
    processors = LogitsProcessorList([probe] if probe else [])
    with torch.no_grad():
        return model.generate(prompt, past_key_values=cache, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                              do_sample=False, logits_processor=processors)


def replay(path, step):
    done = subprocess.run([CLI, "replay", str(path), "--step", str(step)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CASES = {
    "llama-dynamic": (lambda: decoder("llama"), lambda m: DynamicCache(config=m.config)),
    "llama-static": (lambda: decoder("llama"), lambda m: StaticCache(config=m.config, max_cache_len=16)),
    "llama-quantized-quanto": (lambda: decoder("llama"),
                               lambda m: QuantizedCache("quanto", m.config, nbits=4, q_group_size=16, residual_length=3)),
    "llama-quantized-hqq": (lambda: decoder("llama"),
                            lambda m: QuantizedCache("hqq", m.config, nbits=4, q_group_size=16, residual_length=3)),
    "mistral-sliding": (lambda: decoder("mistral", sliding_window=4), lambda m: DynamicCache(config=m.config)),
    "mistral-static-sliding": (lambda: decoder("mistral", sliding_window=4),
                               lambda m: StaticCache(config=m.config, max_cache_len=16)),
    "gemma3-hybrid": (lambda: decoder("gemma3_text", sliding_window=4, num_hidden_layers=3,
                                      layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                      query_pre_attn_scalar=16),
                      lambda m: DynamicCache(config=m.config)),
    "gemma3-static-hybrid": (lambda: decoder("gemma3_text", sliding_window=4, num_hidden_layers=3,
                                             layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                             query_pre_attn_scalar=16),
                             lambda m: StaticCache(config=m.config, max_cache_len=16)),
    "bart-encoder-decoder": (bart, lambda m: EncoderDecoderCache(DynamicCache(), DynamicCache())),
}


@pytest.mark.parametrize("case", list(CASES))
def test_recorded_generate_replays_to_transformers_own_cache(case, tmp_path):
    make_model, make_cache = CASES[case]
    model = make_model()
    layers = model.config.decoder_layers if model.config.is_encoder_decoder else model.config.num_hidden_layers
    plain = generate(model, make_cache(model))
    cache = make_cache(model)
    probe = CacheProbe(cache, layers)
    path = tmp_path / (case + ".kvsess")
    with kvscope.record(path, model=model):
        recorded = generate(model, cache, probe)
    assert torch.equal(plain, recorded), "recording changed the generated tokens"
    info = json.loads(subprocess.run([CLI, "info", str(path)], capture_output=True, text=True, check=True).stdout)
    assert info["complete"] and info["steps"] == NEW_TOKENS, info
    # The replayed mask sizes are those of the next one-token query, as the probe asks for them.
    for step, expected in enumerate(probe.steps):
        state = replay(path, step)
        for layer, (seq_length, (kv_length, kv_offset)) in enumerate(expected):
            got = state["layers"][layer]
            assert (got["seq_length"], got["kv_length"], got["kv_offset"]) == (seq_length, kv_length, kv_offset), \
                (case, step, layer, got)


@pytest.mark.parametrize("case", ["mistral-sliding", "gemma3-hybrid", "llama-dynamic"])
def test_recorded_prompt_lookup_rollback_replays_to_transformers_own_cache(case, tmp_path):
    """Prompt-lookup decoding (`prompt_lookup_num_tokens`): each step writes draft tokens into every layer and
    crops the rejected ones; since 5.18 sliding layers roll back through `activate_past_recording()`. Recording
    changes no token, the session replays to the cache's final lengths and mask sizes, and its crops are there."""
    make_model, make_cache = CASES[case]
    model = make_model()
    layers = model.config.num_hidden_layers
    # A repetitive prompt, so that the lookup finds candidates and some are rejected.
    prompt = torch.tensor([[5, 17, 99, 3, 42, 5, 17, 99, 3, 42, 5, 17]])
    settings = dict(max_new_tokens=10, min_new_tokens=10, do_sample=False, prompt_lookup_num_tokens=3)
    with torch.no_grad():
        plain = model.generate(prompt, past_key_values=make_cache(model), **settings)
    cache = make_cache(model)
    path = tmp_path / (case + "-prompt-lookup.kvsess")
    with kvscope.record(path, model=model):
        with torch.no_grad():
            recorded = model.generate(prompt, past_key_values=cache, **settings)
        # The next one-token query's mask sizes, asked inside the recording as a model would (the replay shows
        # the last mask sizes asked).
        expected = [(int(cache.get_seq_length(layer)), *(int(x) for x in cache.get_mask_sizes(1, layer)))
                    for layer in range(layers)]
        held = [int(cache.layers[layer].keys.shape[-2]) for layer in range(layers)]
    assert torch.equal(plain, recorded), "recording changed the generated tokens"
    info = json.loads(subprocess.run([CLI, "info", str(path)], capture_output=True, text=True, check=True).stdout)
    assert info["complete"], info
    final = replay(path, info["steps"] - 1)
    for layer in range(layers):
        got = final["layers"][layer]
        assert (got["seq_length"], got["kv_length"], got["kv_offset"]) == expected[layer], (case, layer, got)
        # A sliding layer recorded its past until each crop trimmed it back to its window.
        assert got["stored_tokens"] == held[layer], (case, layer, got)
    # Each step verified its drafts and cropped the rejected ones (crop(-n), crop(0) when all were accepted):
    # one Crop event per layer and step.
    assert info["event_counts"].get("crop") == layers * info["steps"], info["event_counts"]
