"""Conformance fixtures written by the installed Transformers release (the real `transformers.cache_utils`).

Runs the release's cache classes, with the real quanto and HQQ backends, on seeded random update sequences
and writes what they returned in kvscope's fixture format (tests/data/conformance/README.md), so that
`kvscope-cli conform DIR` checks kvscope's caches against the release users run:

    python transformers_cache_fixtures.py OUT_DIR [--seed S] [--count N]

Only the operations on which the release and the seed `cache_utils.py` agree are drawn here (kvscope follows
the seed where they differ); each difference is a case of transformers_cache_differences.py and of
docs/transformers-release.md.
"""
import argparse
import json
import os
import random
import traceback
import warnings

import torch
import transformers
from transformers import PretrainedConfig
from transformers import cache_utils as cu

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

PEER = f"transformers {transformers.__version__} cache_utils (installed release), torch {torch.__version__}"


def tensor_json(t):
    t = t.detach().to(torch.float64).contiguous()
    return {"shape": list(t.shape), "data": t.flatten().tolist()}


def seq_length(layer):
    n = layer.get_seq_length()
    return int(n.item()) if isinstance(n, torch.Tensor) else int(n)


def max_length(layer):
    # The release renamed get_max_cache_shape (the seed's name, a warning here) to get_max_length.
    return int(layer.get_max_length())


class HqqPackingError(Exception):
    """HQQ's bit packing failed on the tensor's row count, packing or unpacking (a listed difference: kvscope
    keeps codes unpacked)."""


def from_hqq_packer(error):
    return any("hqq/core/" in frame.filename.replace("\\", "/") for frame in traceback.extract_tb(error.__traceback__))


class Ops:
    """The ops applied to one release object, each recorded with what the release returned or raised."""

    def __init__(self, torch_rng, batch, heads, head_dim):
        self.rng, self.batch, self.heads, self.head_dim = torch_rng, batch, heads, head_dim
        self.list = []

    def states(self, length, batch=None):
        shape = (batch or self.batch, self.heads, length, self.head_dim)
        return torch.randn(shape, generator=self.rng), torch.randn(shape, generator=self.rng)

    def attempt(self, record, action):
        try:
            result = action()
        except (ValueError, RuntimeError, IndexError, TypeError) as error:
            if isinstance(error, RuntimeError) and from_hqq_packer(error):
                raise HqqPackingError() from error
            record["expect_error"] = type(error).__name__
            self.list.append(record)
            return None
        self.list.append(record)
        return result

    def stored(self, record, layer):
        if isinstance(layer.keys, torch.Tensor) and layer.keys.numel() > 0:
            record["expect_stored_keys"] = tensor_json(layer.keys)
            record["expect_stored_values"] = tensor_json(layer.values)


def chunk_lengths(pyrng, total):
    chunks = [pyrng.choice([1, 2, 3, 5, 8])]
    while sum(chunks) < max(total, chunks[0] + 4):
        chunks.append(1 if pyrng.random() < 0.8 else pyrng.choice([2, 3, 4]))
    return chunks


LAYER_KINDS = ["dynamic", "dynamic_sliding", "static", "static_sliding", "quantized", "quantized_hqq"]


def make_layer(pyrng, kind, chunks):
    """The release's layer of this kind with random options; the options in the fixture's names."""
    if kind == "dynamic":
        return cu.DynamicLayer(), {}, chunks
    if kind == "dynamic_sliding":
        params = {"sliding_window": pyrng.randint(2, 8)}
        return cu.DynamicSlidingWindowLayer(**params), params, chunks
    if kind == "static":
        params = {"max_cache_len": sum(chunks) + pyrng.randint(0, 4)}
        return cu.StaticLayer(**params), params, chunks
    if kind == "static_sliding":
        params = {"max_cache_len": sum(chunks) + pyrng.randint(0, 4), "sliding_window": pyrng.randint(2, 8)}
        return cu.StaticSlidingWindowLayer(**params), params, chunks
    if kind == "quantized_hqq":
        params = {"nbits": pyrng.choice([1, 2, 3, 4, 8]), "axis_key": pyrng.choice([0, 1]),
                  "axis_value": pyrng.choice([0, 1]), "q_group_size": pyrng.choice([4, 8]),
                  "residual_length": pyrng.randint(2, 6)}
        return cu.HQQQuantizedLayer(**params), params, chunks
    # optimum-quanto: 2 or 4 bits, groups along head_dim (axis 0) or per channel over tokens (axis -1).
    params = {"nbits": pyrng.choice([2, 4]), "axis_key": pyrng.choice([0, -1]), "axis_value": pyrng.choice([0, -1]),
              "q_group_size": pyrng.choice([4, 8]), "residual_length": pyrng.randint(2, 6)}
    if -1 in (params["axis_key"], params["axis_value"]):
        # per-channel groups span batch*heads*tokens: keep every length a multiple of the group
        chunks = [params["q_group_size"]] * pyrng.randint(2, 4)
    elif chunks[0] == 1:
        # a prompt of one group would be quantized per element by quanto (a listed difference)
        chunks = [2] + chunks[1:]
    return cu.QuantoQuantizedLayer(**params), params, chunks


def layer_scenario(pyrng, torch_rng, index, kind):
    batch, heads = pyrng.choice([1, 1, 2]), pyrng.choice([1, 2])
    head_dim = 8 if kind.startswith("quantized") else pyrng.choice([2, 4])
    layer, params, chunks = make_layer(pyrng, kind, chunk_lengths(pyrng, pyrng.randint(6, 20)))
    extras = {}
    # crop to an absolute length shorter than the cache, or by 1 or 2 tokens of a longer one: where the
    # release and the seed agree (docs/transformers-release.md). A sliding layer only before its window fills.
    if kind in ("dynamic", "dynamic_sliding") and len(chunks) > 3 and pyrng.random() < 0.5:
        extras.setdefault(pyrng.randrange(1, len(chunks) - 1), []).append(("crop", pyrng.choice([-1, -2, 3, 5])))
    if kind in ("dynamic", "dynamic_sliding", "static") and batch == 2 and pyrng.random() < 0.5:
        extras.setdefault(pyrng.randrange(0, len(chunks) - 1), []).append(("reorder", [1, 0]))
    if kind == "dynamic" and batch == 1 and pyrng.random() < 0.4:
        at = pyrng.randrange(0, len(chunks) - 1)
        extras.setdefault(at, []).extend([("repeat", 2), ("select", [1])])
    ops = Ops(torch_rng, batch, heads, head_dim)
    for step, length in enumerate(chunks):
        ops.list.append({"op": "mask_sizes", "query_length": length, "expect": list(layer.get_mask_sizes(length))})
        k, v = ops.states(length, batch)
        record = {"op": "update", "keys": tensor_json(k), "values": tensor_json(v)}
        try:
            out = ops.attempt(record, lambda: layer.update(k, v))
        except HqqPackingError:
            ops.list.pop()  # the mask_sizes probe of this update
            break
        if out is None:
            break
        record["expect_keys"], record["expect_values"] = tensor_json(out[0]), tensor_json(out[1])
        record["expect_seq_length"] = seq_length(layer)
        record["expect_max_cache_shape"] = max_length(layer)
        ops.stored(record, layer)
        for name, argument in extras.get(step, []):
            if name == "crop":
                if kind == "dynamic_sliding" and seq_length(layer) >= params["sliding_window"]:
                    continue  # the release raises RuntimeError, the seed ValueError: a listed difference
                if argument < 0 and -argument >= seq_length(layer):
                    continue  # an over-crop: the release empties the layer, the seed keeps len - (n - len)
                ops.attempt({"op": "crop", "max_length": argument}, lambda: layer.crop(argument))
            elif name == "reorder":
                ops.attempt({"op": "reorder", "beam_idx": argument},
                            lambda: layer.reorder_cache(torch.tensor(argument)))
            elif name == "repeat":
                ops.attempt({"op": "batch_repeat_interleave", "repeats": argument},
                            lambda: layer.batch_repeat_interleave(argument))
                batch *= argument
            elif name == "select":
                ops.attempt({"op": "batch_select_indices", "indices": argument},
                            lambda: layer.batch_select_indices(torch.tensor(argument)))
                batch = len(argument)
            state = {"op": "state", "expect_seq_length": seq_length(layer)}
            ops.stored(state, layer)
            ops.list.append(state)
    return {"name": f"release_{index:03d}_{kind}", "level": "layer", "layer": {"type": kind, **params},
            "dtype": "float32", "ops": ops.list}


def model_config(pyrng, style, layers):
    """A config dict as kvscope reads it; the release reads the same keys through PretrainedConfig."""
    window = pyrng.randint(2, 6)
    config = {"num_hidden_layers": layers}
    if style == "sliding":
        config["sliding_window"] = window
    elif style == "hybrid":
        config["sliding_window"] = window
        config["layer_types"] = [pyrng.choice(["full_attention", "sliding_attention"]) for _ in range(layers)]
    elif style == "chunked":
        config["attention_chunk_size"] = window
        config["sliding_window"] = None
        config["layer_types"] = [pyrng.choice(["full_attention", "chunked_attention"]) for _ in range(layers)]
    return config


def cache_scenario(pyrng, torch_rng, index, kind, style):
    """A whole cache built from a model config, updated layer by layer."""
    layers = pyrng.randint(2, 4)
    config = model_config(pyrng, style, layers)
    chunks = chunk_lengths(pyrng, pyrng.randint(5, 12))
    spec = {"type": kind, "config": config}
    release_config = PretrainedConfig(**config)
    if kind == "StaticCache":
        spec["max_cache_len"] = sum(chunks) + pyrng.randint(0, 3)
        cache = cu.StaticCache(config=release_config, max_cache_len=spec["max_cache_len"])
    elif kind == "QuantizedCache":
        backend = pyrng.choice(["quanto", "hqq"])
        spec.update({"backend": backend, "nbits": pyrng.choice([2, 4]), "axis_key": 0, "axis_value": 0,
                     "q_group_size": 4, "residual_length": pyrng.randint(2, 5)})
        cache = cu.QuantizedCache(backend, release_config, nbits=spec["nbits"], q_group_size=4,
                                  residual_length=spec["residual_length"])
    else:
        cache = cu.DynamicCache(config=release_config)
    ops = Ops(torch_rng, 1, 2, 4 if kind == "QuantizedCache" else 2)
    packed = True
    for length in chunks:
        for layer_idx in range(layers):
            ops.list.append({"op": "mask_sizes", "layer_idx": layer_idx, "query_length": length,
                             "expect": list(cache.get_mask_sizes(length, layer_idx))})
            k, v = ops.states(length)
            record = {"op": "update", "layer_idx": layer_idx, "keys": tensor_json(k), "values": tensor_json(v)}
            try:
                out = ops.attempt(record, lambda: cache.update(k, v, layer_idx))
            except HqqPackingError:
                ops.list.pop()
                packed = False
                break
            if out is None:
                break
            record["expect_keys"], record["expect_values"] = tensor_json(out[0]), tensor_json(out[1])
            record["expect_seq_length"] = seq_length(cache.layers[layer_idx])
        if not packed:
            break
        ops.list.append({"op": "cache_state", "expect_seq_length": int(cache.get_seq_length()),
                         "expect_is_sliding": cache.is_sliding,
                         "expect_max_cache_shape": [int(cache.get_max_length(i)) for i in range(layers)]})
    return {"name": f"release_{index:03d}_{kind}_{style}", "level": "cache", "cache": spec, "dtype": "float32", "ops": ops.list}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--count", type=int, default=48)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    pyrng = random.Random(args.seed)
    torch_rng = torch.Generator().manual_seed(args.seed)
    styles = ["full", "sliding", "hybrid", "chunked"]
    for index in range(args.count):
        if index % 3 == 2:
            round_ = index // 3
            kind = ["DynamicCache", "StaticCache", "QuantizedCache"][round_ % 3]
            style = "full" if kind == "QuantizedCache" else styles[(round_ // 3) % 4]
            # No offloading here: the release offloads through torch.cuda streams and fails on a CPU-only torch
            # (a listed difference); kvscope models the transfers on the CPU.
            scenario = cache_scenario(pyrng, torch_rng, index, kind, style)
        else:
            scenario = layer_scenario(pyrng, torch_rng, index, LAYER_KINDS[(index - index // 3) % len(LAYER_KINDS)])
        scenario["reference"] = PEER
        with open(os.path.join(args.out, scenario["name"] + ".json"), "w") as f:
            json.dump(scenario, f, separators=(",", ":"))
    print(f"wrote {args.count} fixtures from {PEER} to {args.out}")


if __name__ == "__main__":
    main()
