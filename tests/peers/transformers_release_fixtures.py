"""Conformance fixtures of what only the release has, written by the installed Transformers (5.18) itself.

transformers_cache_fixtures.py draws the operations where the release and the seed agree; this script draws
the release's own: its `crop(tokens_to_remove)` (kvscope's cropTokens, op `crop_tokens`) on dynamic, sliding,
indexed, linear-attention and hybrid layers, `activate_past_recording()` and the speculative-decoding rollback
it enables (draft tokens written into every layer, the rejected ones cropped), the indexer key cache of
`DynamicIndexedLayer` and `StaticIndexedLayer` (`update_indexer`), the hybrid layers `hybrid_sliding` and the
static cache's `hybrid`, and the query offsets of `MtpCache` and `DFlashCache`. It writes kvscope's fixture
format (tests/data/conformance/README.md), replayed by `kvscope-cli conform`:

    python transformers_release_fixtures.py OUT_DIR [--seed S] [--count N]
"""
import argparse
import json
import os
import random
import warnings

import torch
import transformers
from transformers import PretrainedConfig
from transformers import cache_utils as cu

from transformers_cache_fixtures import PEER, max_length, seq_length, tensor_json

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

# What kvscope reads as the release's refusals (AttributeError: the static layers have no `crop`).
REFUSALS = (ValueError, RuntimeError, IndexError, TypeError, AttributeError)


class Ops:
    def __init__(self, rng, batch, heads, head_dim):
        self.rng, self.batch, self.heads, self.head_dim = rng, batch, heads, head_dim
        self.list = []

    def randn(self, *shape):
        return torch.randn(shape, generator=self.rng)

    def attempt(self, record, action):
        """Runs `action`, recording its refusal; returns (ok, result)."""
        try:
            result = action()
        except REFUSALS as error:
            record["expect_error"] = type(error).__name__
            self.list.append(record)
            return False, None
        self.list.append(record)
        return True, result


def stored(record, layer):
    if isinstance(layer.keys, torch.Tensor) and layer.keys.dim() == 4 and layer.keys.numel() > 0:
        record["expect_stored_keys"] = tensor_json(layer.keys)
        record["expect_stored_values"] = tensor_json(layer.values)


def crop_argument(pyrng, drafted):
    """What a speculative step crops: minus the rejected draft tokens (0 when all were accepted), now and then
    the release's other meanings (a deprecated positive length, an over-long crop)."""
    roll = pyrng.random()
    if roll < 0.1:
        return pyrng.randint(1, 12)
    if roll < 0.15:
        return -pyrng.randint(drafted + 1, drafted + 30)
    return -pyrng.randint(0, drafted)


# --- single layers ------------------------------------------------------------------------------------------

LAYER_KINDS = ["dynamic", "dynamic_sliding", "dynamic_sliding_recording", "dynamic_indexed", "static_indexed"]


def make_layer(pyrng, kind, total):
    if kind == "dynamic":
        return cu.DynamicLayer(), {"type": "dynamic"}
    if kind.startswith("dynamic_sliding"):
        window = pyrng.randint(2, 8)
        return cu.DynamicSlidingWindowLayer(sliding_window=window), {"type": "dynamic_sliding", "sliding_window": window}
    if kind == "dynamic_indexed":
        return cu.DynamicIndexedLayer(), {"type": "dynamic_indexed"}
    max_cache_len = total + pyrng.randint(0, 3)
    return cu.StaticIndexedLayer(max_cache_len=max_cache_len), {"type": "static_indexed", "max_cache_len": max_cache_len}


def layer_scenario(pyrng, torch_rng, index, kind):
    batch, heads, head_dim = pyrng.choice([1, 1, 2]), pyrng.choice([1, 2]), pyrng.choice([2, 4])
    prompt = pyrng.choice([1, 2, 3, 5, 8])
    steps = [pyrng.randint(1, 4) for _ in range(pyrng.randint(3, 7))]
    layer, spec = make_layer(pyrng, kind, prompt + sum(steps))
    ops = Ops(torch_rng, batch, heads, head_dim)
    indexed = "indexed" in kind
    index_dim = pyrng.choice([2, 3])
    recording = kind == "dynamic_sliding_recording" or (kind != "static_indexed" and pyrng.random() < 0.3)
    if recording and hasattr(layer, "activate_past_recording"):
        ops.list.append({"op": "activate_past_recording"})
        layer.activate_past_recording()
    for step, length in enumerate([prompt] + steps):
        ops.list.append({"op": "mask_sizes", "query_length": length, "expect": list(layer.get_mask_sizes(length))})
        k, v = ops.randn(batch, heads, length, head_dim), ops.randn(batch, heads, length, head_dim)
        record = {"op": "update", "keys": tensor_json(k), "values": tensor_json(v)}
        ok, out = ops.attempt(record, lambda: layer.update(k, v))
        if not ok:
            break
        record["expect_keys"], record["expect_values"] = tensor_json(out[0]), tensor_json(out[1])
        record["expect_seq_length"] = seq_length(layer)
        record["expect_max_cache_shape"] = max_length(layer)
        stored(record, layer)
        if indexed:
            indexer = ops.randn(batch, length, index_dim)
            record = {"op": "update_indexer", "indexer_keys": tensor_json(indexer)}
            ok, out = ops.attempt(record, lambda: layer.update_indexer(indexer))
            if not ok:
                break
            record["expect_indexer_keys"] = tensor_json(out)
        if step == 0:
            continue
        # after each draft step: crop what was rejected, now and then a batch operation or offload/prefetch
        if kind != "static_indexed":
            argument = crop_argument(pyrng, length)
            ops.attempt({"op": "crop_tokens", "tokens_to_remove": argument}, lambda: layer.crop(argument))
        if batch == 2 and pyrng.random() < 0.3:
            beams = [1, 0]
            ops.attempt({"op": "reorder", "beam_idx": beams}, lambda: layer.reorder_cache(torch.tensor(beams)))
        if kind in ("dynamic", "dynamic_indexed") and batch == 1 and pyrng.random() < 0.2:
            ops.attempt({"op": "batch_repeat_interleave", "repeats": 2}, lambda: layer.batch_repeat_interleave(2))
            ops.attempt({"op": "batch_select_indices", "indices": [1]},
                        lambda: layer.batch_select_indices(torch.tensor([1])))
        if pyrng.random() < 0.2:
            ops.list.append({"op": "offload"})
            layer.offload()
            ops.list.append({"op": "prefetch"})
            layer.prefetch()
        if kind == "static_indexed" and pyrng.random() < 0.15:
            # The static layers' reset zeroes in place as the seed's does (the dynamic ones differ: a listed
            # difference), the indexer's count with it.
            ops.list.append({"op": "reset"})
            layer.reset()
        state = {"op": "state", "expect_seq_length": seq_length(layer)}
        stored(state, layer)
        ops.list.append(state)
    return {"name": f"release518_{index:03d}_{kind}", "level": "layer", "layer": spec, "dtype": "float32",
            "ops": ops.list}


# --- whole caches -------------------------------------------------------------------------------------------

CACHE_KINDS = ["DynamicCache", "StaticCache", "MtpCache", "DFlashCache"]


def cache_scenario(pyrng, torch_rng, index, kind):
    layers = pyrng.randint(2, 4)
    window = pyrng.randint(2, 6)
    if kind == "StaticCache":
        choices = ["full_attention", "sliding_attention", "indexed_attention", "hybrid", "hybrid_sliding"]
    elif kind == "DynamicCache":
        choices = ["full_attention", "sliding_attention", "indexed_attention", "hybrid", "hybrid_sliding",
                   "linear_attention"]
    else:
        choices = ["full_attention", "sliding_attention"]
    types = [pyrng.choice(choices) for _ in range(layers)]
    if all(t == "linear_attention" for t in types):
        types[0] = "full_attention"
    config = {"num_hidden_layers": layers, "sliding_window": window, "layer_types": types}
    prompt = pyrng.choice([1, 2, 3, 5, 8])
    steps = [pyrng.randint(1, 4) for _ in range(pyrng.randint(3, 6))]
    spec = {"type": kind, "config": config}
    release_config = PretrainedConfig(**config)
    if kind == "StaticCache":
        spec["max_cache_len"] = prompt + sum(steps) + pyrng.randint(0, 3)
        cache = cu.StaticCache(config=release_config, max_cache_len=spec["max_cache_len"])
    else:
        cache = getattr(cu, kind)(config=release_config)
    ops = Ops(torch_rng, 1, 2, 2)
    kernel, channels, index_dim = pyrng.choice([2, 3, 4]), 3, 2
    speculative = kind != "StaticCache" and pyrng.random() < 0.8
    if speculative:
        ops.list.append({"op": "activate_past_recording"})
        cache.activate_past_recording()
    for step, length in enumerate([prompt] + steps):
        if kind == "DFlashCache" and step > 0:
            accepted = pyrng.randint(0, 3)
            ops.list.append({"op": "set_previous_accepted_tokens", "count": accepted})
            cache.set_previous_accepted_tokens(accepted)
        for layer_idx, layer_type in enumerate(types):
            linear = layer_type in ("linear_attention", "hybrid", "hybrid_sliding")
            if layer_type != "linear_attention":
                ops.list.append({"op": "mask_sizes", "layer_idx": layer_idx, "query_length": length,
                                 "expect": list(cache.get_mask_sizes(length, layer_idx))})
                if kind in ("MtpCache", "DFlashCache"):
                    ops.list.append({"op": "query_offset", "layer_idx": layer_idx,
                                     "expect": int(cache.get_query_offset(layer_idx))})
                k, v = ops.randn(1, 2, length, 2), ops.randn(1, 2, length, 2)
                record = {"op": "update", "layer_idx": layer_idx, "keys": tensor_json(k), "values": tensor_json(v)}
                ok, out = ops.attempt(record, lambda: cache.update(k, v, layer_idx))
                if not ok:
                    return finish(kind, index, spec, ops)
                record["expect_keys"], record["expect_values"] = tensor_json(out[0]), tensor_json(out[1])
                record["expect_seq_length"] = seq_length(cache.layers[layer_idx])
            if linear:
                # The release returns `cat(old, new)` here, the seed the rolled window (a listed difference):
                # only what the layer keeps is compared, after each crop.
                conv = ops.randn(1, channels, kernel if step == 0 else length)
                ops.list.append({"op": "update_conv_state", "layer_idx": layer_idx, "conv_states": tensor_json(conv)})
                cache.update_conv_state(conv, layer_idx)
            if layer_type == "indexed_attention":
                indexer = ops.randn(1, length, index_dim)
                record = {"op": "update_indexer", "layer_idx": layer_idx, "indexer_keys": tensor_json(indexer)}
                ok, out = ops.attempt(record, lambda: cache.update_indexer(indexer, layer_idx))
                if not ok:
                    return finish(kind, index, spec, ops)
                record["expect_indexer_keys"] = tensor_json(out)
        if step > 0 and (speculative or pyrng.random() < 0.3):
            argument = crop_argument(pyrng, length)
            ok, _ = ops.attempt({"op": "crop_tokens", "tokens_to_remove": argument}, lambda: cache.crop(argument))
            if not ok:
                # A refusal part-way leaves the layers before it cropped: both sides stop here.
                return finish(kind, index, spec, ops)
        for layer_idx, layer_type in enumerate(types):
            layer = cache.layers[layer_idx]
            if layer_type != "linear_attention":
                state = {"op": "state", "layer_idx": layer_idx, "expect_seq_length": seq_length(layer)}
                stored(state, layer)
                ops.list.append(state)
            if layer_type in ("linear_attention", "hybrid", "hybrid_sliding") and step > 0 and speculative:
                window_now = layer.conv_states[0]
                if window_now.shape[-1] == layer.conv_kernel_size[0]:
                    ops.list.append({"op": "conv_window", "layer_idx": layer_idx,
                                     "expect_conv_states": tensor_json(window_now)})
        ops.list.append({"op": "cache_state", "expect_seq_length": int(cache.get_seq_length()),
                         "expect_is_sliding": cache.is_sliding,
                         "expect_max_cache_shape": {str(i): int(cache.get_max_length(i))
                                                    for i, t in enumerate(types) if t != "linear_attention"}})
    return finish(kind, index, spec, ops)


def finish(kind, index, spec, ops):
    return {"name": f"release518_{index:03d}_{kind}", "level": "cache", "cache": spec, "dtype": "float32",
            "ops": ops.list}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--count", type=int, default=48)
    args = parser.parse_args()
    for name in ("DynamicIndexedLayer", "StaticIndexedLayer", "MtpCache", "DFlashCache",
                 "LinearAttentionAndSlidingWindowAttentionLayer"):
        if not hasattr(cu, name):
            raise SystemExit(f"{PEER} has no {name}: these fixtures need Transformers 5.18 or later")
    os.makedirs(args.out, exist_ok=True)
    pyrng = random.Random(args.seed)
    torch_rng = torch.Generator().manual_seed(args.seed)
    for index in range(args.count):
        if index % 2:
            scenario = cache_scenario(pyrng, torch_rng, index, CACHE_KINDS[(index // 2) % len(CACHE_KINDS)])
        else:
            scenario = layer_scenario(pyrng, torch_rng, index, LAYER_KINDS[(index // 2) % len(LAYER_KINDS)])
        scenario["reference"] = PEER
        with open(os.path.join(args.out, scenario["name"] + ".json"), "w") as f:
            json.dump(scenario, f, separators=(",", ":"))
    print(f"wrote {args.count} fixtures from {PEER} to {args.out}")


if __name__ == "__main__":
    main()
