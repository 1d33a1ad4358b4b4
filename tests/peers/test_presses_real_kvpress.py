# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope's presses against kvpress 0.5.5 itself, on tiny random Llama and Qwen3 models saved with
save_pretrained: for each press both have, the same ratio and options, kvpress's press on the Transformers model
and `kvscope-cli run --checkpoint` must keep the same positions per layer and KV head after the prefill (the
same key channels for ThinK, the same hidden slots for AdaKV), and pick the same next two tokens from the same
log-probabilities (1e-4; the second one attends through the compressed cache). The decoding presses must give
the same tokens and log-probabilities at every step of a 14-token run with three compressions.

Run by ctest (`peers_kvpress`) with the peers' Python: KVSCOPE_CLI names the CLI.
"""
import json
import os
import subprocess
import warnings

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

import kvpress

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("KVSCOPE_CLI", os.path.join(ROOT, "build", "dev", "engine", "cli", "kvscope-cli"))
# A checkpoint without tokenizer reads bytes. No byte repeats: in layer 0 a key depends on its token alone, so a
# repeated token ties with itself under every score, and a tie leaves the choice (and what follows) to the
# order each side breaks it in. Without ties the kept positions, tokens and log-probabilities all compare.
PROMPT = "MrJock;TVquizPhD,bagsfewlynx.0123456789+=[]{}<>!?"
assert len(set(PROMPT)) == len(PROMPT)
SMALL = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 260, "initializer_range": 0.2,
         "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
HEADS = SMALL["num_key_value_heads"]
MODELS = {"llama": {"tie_word_embeddings": False}, "qwen3": {"tie_word_embeddings": True}}

# kvscope's name: (kvpress class, options both take). Options shrink windows below the 50-token prompt.
PRESSES = {
    "knorm": ("KnormPress", {}),
    "streaming_llm": ("StreamingLLMPress", {"n_sink": 4}),
    "snapkv": ("SnapKVPress", {"window_size": 8, "kernel_size": 5}),
    "tova": ("TOVAPress", {}),
    "pyramidkv": ("PyramidKVPress", {"window_size": 8, "kernel_size": 5}),
    "expected_attention": ("ExpectedAttentionPress", {"n_future_positions": 64, "n_sink": 4}),
    "keydiff": ("KeyDiffPress", {}),
    "lagkv": ("LagKVPress", {"n_sink": 4, "lag_size": 8}),
    "non_causal_attention": ("NonCausalAttnPress", {"chunk_size": 16}),
    "cur": ("CURPress", {"num_sinks": 4, "local_window_size": 16}),
    "compactor": ("CompactorPress", {"chunk_size": 16, "sketch_dimension": 48}),
    "cap": ("CapPress", {"n_future_positions": 64, "n_sink": 4}),
    "random": ("RandomPress", {"seed": 0}),
}
# Wrappers: kvscope's name: (kvpress class, its own options); the base press is Knorm in both.
WRAPPERS = {
    "chunkkv": ("ChunkKVPress", {"chunk_length": 8}),
    "chunk": ("ChunkPress", {"chunk_length": 16}),
    "block": ("BlockPress", {"block_size": 16}),
    "criticalkv": ("CriticalKVPress", {"epsilon": 1e-4, "first_stage_ratio": 0.5}),
}
# Presses of their own shape: kvscope's name: (kvpress press at a ratio, kvscope's --press-option values).
OTHERS = {
    # Scores by the attention the prompt's queries paid (kvpress reads it from eager attention).
    "observed_attention": (lambda ratio: kvpress.ObservedAttentionPress(compression_ratio=ratio), {}),
    # Zeroes the least used key channels per head; keeps every token.
    "think": (lambda ratio: kvpress.ThinKPress(key_channel_compression_ratio=ratio, window_size=8),
              {"window_size": 8}),
    # SnapKV, then Knorm on what SnapKV kept.
    "composed": (lambda ratio: kvpress.ComposedPress([
        kvpress.SnapKVPress(compression_ratio=ratio, window_size=8, kernel_size=5),
        kvpress.KnormPress(compression_ratio=0.5)]),
        {"first": "snapkv", "first.window_size": 8, "first.kernel_size": 5, "second": "knorm",
         "second_ratio": 0.5}),
    # Random sketches: kvscope draws layer l's from a generator seeded `seed + l`; kvpress_run seeds torch's
    # global generator so before each layer's draw (LEVERAGE_SEEDED), and the two Gaussian draws then agree.
    "leverage": (lambda ratio: kvpress.LeverageScorePress(compression_ratio=ratio, sketch_dimension=12),
                 {"sketch_dimension": 12, "seed": 0}),
    # Knorm, then the kept keys rotated to consecutive positions (kept tokens are found by their values).
    "key_rerotation": (lambda ratio: kvpress.KeyRerotationPress(press=kvpress.KnormPress(compression_ratio=ratio)),
                       {"base": "knorm"}),
    # Head-wise budgets: every slot stays, the pruned ones are hidden from attention per KV head.
    "adakv": (lambda ratio: kvpress.AdaKVPress(press=kvpress.KnormPress(compression_ratio=ratio), alpha_safeguard=0.2),
              {"base": "knorm", "alpha_safeguard": 0.2}),
    "criticaladakv": (lambda ratio: kvpress.CriticalAdaKVPress(press=kvpress.KnormPress(compression_ratio=ratio),
                                                               alpha_safeguard=0.2, epsilon=1e-4, first_stage_ratio=0.5),
                      {"base": "knorm", "alpha_safeguard": 0.2, "epsilon": 1e-4, "first_stage_ratio": 0.5}),
    # A layer whose last query pays the first 4 and last 16 tokens more than the threshold (the run's ratio
    # here) keeps only those; any other layer keeps everything.
    "simlayerkv": (lambda ratio: kvpress.SimLayerKVPress(lazy_threshold=ratio, n_last=1, n_recent=16, n_initial=4),
                   None),
    # Knorm at the run's ratio on layer 0 and half of it on layer 1.
    "per_layer_compression": (lambda ratio: kvpress.PerLayerCompressionPress(
        press=kvpress.KnormPress(), compression_ratios=[ratio, ratio / 2]), None),
}
RATIOS = [0.25, 0.5]


def pass_cache_position(module, args, kwargs):
    """kvpress 0.5.5 reads `cache_position` from the attention's keywords; Transformers stopped passing it in 5.4.
    This passes it as 5.2 did (the positions of the step's queries), changing nothing else."""
    cache = kwargs.get("past_key_values")
    hidden = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
    past = cache.get_seq_length(module.layer_idx) if cache is not None else 0
    kwargs["cache_position"] = torch.arange(past, past + hidden.shape[1], device=hidden.device)
    return args, kwargs


@pytest.fixture(scope="module", params=list(MODELS))
def checkpoint(request, tmp_path_factory):
    config = AutoConfig.for_model(request.param, **{**SMALL, **MODELS[request.param]})
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:
                # Norm weights of 1 would give Qwen3's normed keys all one norm: every Knorm score tied.
                parameter.add_(0.3 * torch.randn(parameter.shape))
    folder = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(folder)
    for layer in model.model.layers:
        layer.self_attn.register_forward_pre_hook(pass_cache_position, with_kwargs=True)
    return request.param, model, folder


def kvpress_run(model, press):
    """Kept positions per layer and KV head after kvpress's prefill, the next two greedy tokens and the
    log-probabilities each came from."""
    ids = torch.tensor([[256] + list(PROMPT.encode())])  # kvscope's byte tokenizer: <bos> (256), then the bytes
    with torch.no_grad():
        full = DynamicCache()
        model(ids, past_key_values=full)
        cache = DynamicCache()
        # Presses that draw random numbers draw them from torch's global generator; kvscope seeds its own
        # with the press's `seed` option, 0 by default.
        torch.manual_seed(0)
        scores = []
        scorer = press.press if hasattr(press, "press") else press
        if hasattr(scorer, "score"):
            # kvpress's own scores, one [B, Hkv, T] per layer: ties are judged by them.
            original_score = scorer.score
            scorer.score = lambda *args, **kwargs: scores.append(original_score(*args, **kwargs)) or scores[-1]
        if isinstance(scorer, kvpress.LeverageScorePress):
            draw = scorer.compute_leverage_scores
            layers = iter(range(len(model.model.layers)))
            def seeded(keys, sketch_dimension):
                torch.manual_seed(next(layers))  # kvscope's seed (0) plus the layer
                return draw(keys, sketch_dimension)
            scorer.compute_leverage_scores = seeded
        with press(model):
            out = model(ids, past_key_values=cache)
        if hasattr(scorer, "score"):
            del scorer.score
        if isinstance(scorer, kvpress.LeverageScorePress):
            del scorer.compute_leverage_scores
        first = int(out.logits[0, -1].argmax())
        # kvpress's kept tokens keep their positions; the next one continues from the prompt's length.
        nxt = model(torch.tensor([[first]]), past_key_values=cache, position_ids=torch.tensor([[ids.shape[1]]]))
        second = int(nxt.logits[0, -1].argmax())
        log_probs = [torch.log_softmax(o.logits[0, -1].double(), -1) for o in (out, nxt)]
        # AdaKV's hidden slots (kvpress keeps them on the attention modules for the steps that follow).
        hidden = [getattr(layer.self_attn, "masked_key_indices", None) for layer in model.model.layers]
        for layer in model.model.layers:
            layer.self_attn.masked_key_indices = None
    kept = []
    # Knorm's score is minus the key's norm; wrappers and composed presses score with the same Knorm scores.
    ranks = [s[0] for s in scores] if len(scores) == len(cache.layers) and not hasattr(press, "press") \
        else [-full.layers[layer].keys[0].norm(dim=-1) for layer in range(len(cache.layers))]
    if isinstance(press, kvpress.ThinKPress):
        # ThinK keeps every token and zeroes key channels: the channels that are zero in every prompt key.
        for layer in range(len(cache.layers)):
            pruned = (cache.layers[layer].keys[0, :, :-1] == 0).all(dim=1)  # [Hkv, D]
            kept.append([torch.nonzero(head).flatten().tolist() for head in pruned])
        return kept, [first, second], ranks, log_probs
    if hidden[0] is not None:
        # Every slot stays; a KV head keeps the positions kvpress did not hide from it.
        for layer, (_, heads, positions) in enumerate(hidden):
            length = cache.layers[layer].keys.shape[2] - 1  # minus the new token
            kept.append([sorted(set(range(length)) - set(positions[heads == head].tolist()))
                         for head in range(cache.layers[layer].keys.shape[1])])
        return kept, [first, second], ranks, log_probs
    # Kept tokens are found by their keys, or by their values where kvpress rotated the kept keys.
    field = "values" if isinstance(press, kvpress.KeyRerotationPress) else "keys"
    for layer in range(len(cache.layers)):
        original = getattr(full.layers[layer], field)[0]
        pressed = getattr(cache.layers[layer], field)[0, :, :-1]  # minus the new token
        heads = []
        for head in range(original.shape[0]):
            distance = torch.cdist(pressed[head].double(), original[head].double())
            positions = distance.argmin(-1)
            assert bool((distance.min(-1).values < 1e-6).all()), f"a kept {field[:-1]} is no prompt {field[:-1]}"
            heads.append(sorted(positions.tolist()))
        kept.append(heads)
    return kept, [first, second], ranks, log_probs


def kvscope_session(folder, name, ratio, options, tokens, session):
    """`kvscope-cli run --checkpoint` with the press for `tokens` greedy tokens: its tokens and every step's
    state (`replay --all-steps`)."""
    command = [CLI, "run", "--checkpoint", str(folder), "--prompt", PROMPT, "--tokens", str(tokens), "--press", name,
               "--ratio", str(ratio), "--out", str(session), "--no-progress"]
    for key, value in options.items():
        command += ["--press-option", f"{key}={value}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    states = json.loads(subprocess.run([CLI, "replay", str(session), "--all-steps"], capture_output=True,
                                       text=True, check=True).stdout)
    return json.loads(done.stdout)["tokens"], states


def kvscope_run(folder, name, ratio, options, tmp_path):
    tokens, states = kvscope_session(folder, name, ratio, options, 2, tmp_path / f"{name}-{ratio}.kvsess")
    # What the prefill's compression kept (or, for ThinK, the key channels it zeroed) per layer and KV head.
    field = "pruned_channels" if name == "think" else "kept_positions"
    # A layer the press left whole (SimLayerKV's busy layers) keeps every position of every head.
    kept = [[sorted(head) for head in layer["compression"][field]] if "compression" in layer
            else [list(range(layer["seq_length"]))] * HEADS for layer in states[0]["layers"]]
    # The session's next-token log-probabilities of the prefill (step 0) and of the step after it.
    log_probs = []
    for state in states[:2]:
        assert state["next_token"]["complete"], "a 260-token vocabulary is recorded whole"
        log_probs.append(torch.tensor(state["next_token"]["log_probs"], dtype=torch.float64))
    return kept, tokens, log_probs


def make_press(name, ratio):
    """kvpress's press and the --press-option values kvscope takes for it."""
    if name == "per_layer_compression":
        make, _ = OTHERS[name]
        return make(ratio), {"base": "knorm", "compression_ratios": f"{ratio},{ratio / 2}"}
    if name == "simlayerkv":
        make, _ = OTHERS[name]
        return make(ratio), {"lazy_threshold": ratio, "n_last": 1, "n_recent": 16, "n_initial": 4}
    if name in OTHERS:
        make, options = OTHERS[name]
        return make(ratio), options
    if name in WRAPPERS:
        cls, options = WRAPPERS[name]
        inner = kvpress.KnormPress(compression_ratio=ratio)
        return getattr(kvpress, cls)(press=inner, **options), {"base": "knorm", **options}
    cls, options = PRESSES[name]
    return getattr(kvpress, cls)(compression_ratio=ratio, **options), options


@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("name", list(PRESSES) + list(WRAPPERS) + list(OTHERS))
def test_press_keeps_what_kvpress_keeps(checkpoint, name, ratio, tmp_path):
    family, model, folder = checkpoint
    press, options = make_press(name, ratio)
    if name == "observed_attention":
        model.set_attn_implementation("eager")  # kvpress reads the attention weights eager attention returns
    try:
        expected_kept, expected_tokens, ranks, expected_log_probs = kvpress_run(model, press)
    finally:
        model.set_attn_implementation("sdpa")
    kept, tokens, log_probs = kvscope_run(folder, name, ratio, options, tmp_path)
    where = f"{family}, {name} at {ratio} against kvpress 0.5.5"
    tied = False
    for layer, (ours, theirs) in enumerate(zip(kept, expected_kept)):
        for head, (a, b) in enumerate(zip(ours, theirs)):
            if a == b:
                continue
            assert name != "think", f"{where}: layer {layer}, KV head {head}: kvscope zeroes channels {a}, kvpress {b}"
            # Equal scores: layer 0's keys depend on the token alone, so a repeated token ties. kvscope keeps the
            # earliest of tied tokens, kvpress what torch.topk returns (docs/presses.md). The kept scores agree.
            score = ranks[layer][head].double()
            assert len(a) == len(b) and torch.allclose(score[a].sort().values, score[b].sort().values, atol=1e-6), \
                f"{where}: layer {layer}, KV head {head}: kvscope keeps {a}, kvpress {b} (not a tie)"
            tied = True
    if not tied:  # tokens and logits after a different (tied) choice may differ: the cache differs
        assert tokens == expected_tokens, f"{where}: tokens {tokens}, kvpress {expected_tokens}"
        # Log-probabilities are the logits less their log-sum-exp: the same logits give the same values.
        for step, (ours, theirs) in enumerate(zip(log_probs, expected_log_probs)):
            difference = float((ours - theirs).abs().max())
            assert difference <= 1e-4, f"{where}: step {step}, max |log-prob - kvpress| {difference}"


# Presses that compress while decoding, every 4 passes back to 40 tokens (or to 70% of the tokens seen), with
# KeyDiff as the base (greedy tokens repeat, and Knorm ties a repeated token with itself in layer 0): kvscope's
# name: (kvpress press, kvscope's --press-option values).
DECODING = {
    "decoding": (lambda: kvpress.DecodingPress(base_press=kvpress.KeyDiffPress(), compression_interval=4,
                                               target_size=40, hidden_states_buffer_size=8),
                 {"base": "keydiff", "compression_interval": 4, "target_size": 40, "hidden_states_buffer_size": 8}),
    "prefill_decoding": (lambda: kvpress.PrefillDecodingPress(
        prefilling_press=kvpress.KnormPress(compression_ratio=0.25),
        decoding_press=kvpress.DecodingPress(base_press=kvpress.KeyDiffPress(), compression_interval=4,
                                             target_size=30, hidden_states_buffer_size=8)),
        {"prefill": "knorm", "base": "keydiff", "compression_interval": 4, "target_size": 30,
         "hidden_states_buffer_size": 8}),
    "compression_ratio_decoding": (lambda: kvpress.CompressionRatioDecodingPress(
        base_press=kvpress.KeyDiffPress(), target_compression_ratio=0.3, compression_interval=4,
        hidden_states_buffer_size=8),
        {"base": "keydiff", "target_compression_ratio": 0.3, "compression_interval": 4,
         "hidden_states_buffer_size": 8}),
}
DECODED = 14  # tokens: the prefill's, then 13 decoding passes (three compressions)


@pytest.mark.parametrize("name", list(DECODING))
def test_decoding_press_decodes_as_kvpress(checkpoint, name, tmp_path):
    """Over 14 greedy tokens, kvpress's decoding press on the Transformers model and kvscope's pick the same
    tokens from the same log-probabilities (1e-4) at every step: any difference in what a compression kept shows
    in the steps after it."""
    family, model, folder = checkpoint
    make, options = DECODING[name]
    ids = torch.tensor([[256] + list(PROMPT.encode())])
    expected_tokens, expected_log_probs = [], []
    with torch.no_grad():
        cache = DynamicCache()
        with make()(model):
            logits = model(ids, past_key_values=cache).logits[0, -1]
            for step in range(DECODED):
                expected_tokens.append(int(logits.argmax()))
                expected_log_probs.append(torch.log_softmax(logits.double(), -1))
                if step + 1 < DECODED:
                    # kvpress's pipeline: logical positions continue from the prompt whatever the cache holds.
                    position = torch.tensor([[ids.shape[1] + step]])
                    logits = model(torch.tensor([[expected_tokens[-1]]]), past_key_values=cache,
                                   position_ids=position).logits[0, -1]
    assert cache.layers[0].keys.shape[2] < ids.shape[1] + DECODED - 1, "kvpress compressed nothing"
    tokens, states = kvscope_session(folder, name, 0.25, options, DECODED, tmp_path / f"{name}.kvsess")
    where = f"{family}, {name} against kvpress 0.5.5"
    assert tokens == expected_tokens, f"{where}: tokens {tokens}, kvpress {expected_tokens}"
    for step, state in enumerate(states[:DECODED]):
        ours = torch.tensor(state["next_token"]["log_probs"], dtype=torch.float64)
        difference = float((ours - expected_log_probs[step]).abs().max())
        assert difference <= 1e-4, f"{where}: step {step}, max |log-prob - kvpress| {difference}"
    assert states[-1]["layers"][0]["seq_length"] == cache.layers[0].keys.shape[2], f"{where}: cached tokens"
