"""Where the installed Transformers release and the seed cache_utils.py part, shown on both.

    python transformers_cache_differences.py KVSCOPE_CLI OUT_DIR

kvscope follows the seed (docs/transformers-release.md says why). Each case below runs a short op sequence
on the release's own classes, writes what the release did as a conformance fixture, and replays it with
`kvscope-cli conform`: the case holds when kvscope parts from the release exactly as the document says
(the seed's answer). A case that passes conformance, or fails another way, fails this script: then the
release or kvscope changed, and the document with it.
"""
import json
import os
import subprocess
import sys
import warnings

import torch
import transformers
from transformers import PretrainedConfig
from transformers import cache_utils as cu

from transformers_cache_fixtures import seq_length, tensor_json  # noqa: E402 (beside this file)

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()


def states(generator, length, head_dim=2):
    shape = (1, 1, length, head_dim)
    return torch.randn(shape, generator=generator), torch.randn(shape, generator=generator)


def updates(layer, generator, lengths, head_dim=2):
    ops = []
    for length in lengths:
        k, v = states(generator, length, head_dim)
        layer.update(k, v)
        op = {"op": "update", "keys": tensor_json(k), "values": tensor_json(v), "expect_seq_length": seq_length(layer)}
        if layer.keys.numel() > 0:
            op["expect_stored_keys"], op["expect_stored_values"] = tensor_json(layer.keys), tensor_json(layer.values)
        ops.append(op)
    return ops


def state(layer):
    op = {"op": "state", "expect_seq_length": seq_length(layer)}
    if layer.keys.numel() > 0:
        op["expect_stored_keys"], op["expect_stored_values"] = tensor_json(layer.keys), tensor_json(layer.values)
    return op


def crop_case(layer, spec, lengths, argument):
    generator = torch.Generator().manual_seed(5)
    ops = updates(layer, generator, lengths)
    op = {"op": "crop", "max_length": argument}
    try:
        layer.crop(argument)
    except (ValueError, RuntimeError) as error:
        op["expect_error"] = type(error).__name__
        return {"level": "layer", "layer": spec, "ops": ops + [op]}
    return {"level": "layer", "layer": spec, "ops": ops + [op, state(layer)]}


def crop_zero():
    return crop_case(cu.DynamicLayer(), {"type": "dynamic"}, [5], 0)


def over_crop():
    return crop_case(cu.DynamicLayer(), {"type": "dynamic"}, [3], -5)


def sliding_crop_past_window():
    return crop_case(cu.DynamicSlidingWindowLayer(sliding_window=3), {"type": "dynamic_sliding", "sliding_window": 3},
                     [4], 2)


def quantized_crop():
    params = {"nbits": 4, "axis_key": 0, "axis_value": 0, "q_group_size": 4, "residual_length": 8}
    layer = cu.QuantoQuantizedLayer(**params)
    generator = torch.Generator().manual_seed(5)
    ops = updates(layer, generator, [4, 1, 1], head_dim=4)
    layer.crop(5)
    # The release crops the residual buffer only: the quantized part and the token count stay as they were.
    return {"level": "layer", "layer": {"type": "quantized", **params},
            "ops": ops + [{"op": "crop", "max_length": 5}, {"op": "state", "expect_seq_length": seq_length(layer)}]}


def quanto_one_group():
    params = {"nbits": 2, "axis_key": 0, "axis_value": 0, "q_group_size": 8, "residual_length": 4}
    layer = cu.QuantoQuantizedLayer(**params)
    generator = torch.Generator().manual_seed(5)
    ops = updates(layer, generator, [1], head_dim=8)
    k, v = states(generator, 3, head_dim=8)
    keys, values = layer.update(k, v)
    # The returned keys begin with the prompt's dequantized token: exact in the release.
    ops.append({"op": "update", "keys": tensor_json(k), "values": tensor_json(v), "expect_keys": tensor_json(keys),
                "expect_values": tensor_json(values)})
    return {"level": "layer", "layer": {"type": "quantized", **params}, "ops": ops}


def hqq_packing():
    params = {"nbits": 2, "axis_key": 1, "axis_value": 1, "q_group_size": 4, "residual_length": 4}
    layer = cu.HQQQuantizedLayer(**params)
    k, v = states(torch.Generator().manual_seed(5), 7, head_dim=8)
    op = {"op": "update", "keys": tensor_json(k), "values": tensor_json(v)}
    try:
        layer.update(k, v)
    except RuntimeError as error:
        op["expect_error"] = type(error).__name__
    return {"level": "layer", "layer": {"type": "quantized_hqq", **params}, "ops": [op]}


def linear_conv_state():
    config = {"num_hidden_layers": 1, "layer_types": ["linear_attention"]}
    cache = cu.DynamicCache(config=PretrainedConfig(**config))
    generator = torch.Generator().manual_seed(5)
    ops = []
    for width in (4, 1):
        conv = torch.randn((1, 3, width), generator=generator)
        out = cache.update_conv_state(conv, 0)
        ops.append({"op": "update_conv_state", "layer_idx": 0, "conv_states": tensor_json(conv),
                    "expect_conv_states": tensor_json(out)})
    return {"level": "cache", "cache": {"type": "DynamicCache", "config": config}, "ops": ops}


# name: (what the release does, what kvscope (the seed) does, how conform must report it, the case)
CASES = {
    "crop_zero": ("DynamicLayer.crop(0) is a no-op", "the seed's crop(0) empties the layer",
                  "seq length: engine 0, reference 5", crop_zero),
    "over_crop": ("crop(-5) of 3 tokens empties the layer", "the seed keeps 3 - (5 - 3) = 1 token",
                  "seq length: engine 1, reference 0", over_crop),
    "sliding_crop_past_window": ("cropping a sliding layer past its window raises RuntimeError",
                                 "the seed raises ValueError",
                                 "refused with ValueError where the reference raised RuntimeError",
                                 sliding_crop_past_window),
    "quantized_crop": ("QuantizedLayer.crop cuts the residual only; get_seq_length stays 6",
                       "the seed's override dequantizes, cuts and re-quantizes: 5 tokens",
                       "seq length: engine 5, reference 6", quantized_crop),
    "quanto_one_group": ("optimum-quanto quantizes a tensor that is a single group (a 1-token prompt of 8 values "
                         "in groups of 8) per element: scale 0, the values exact",
                         "kvscope quantizes the group with min-max (2 bits: 4 levels)",
                         "returned keys: max abs difference", quanto_one_group),
    "hqq_packing": ("HQQ packs 2-bit codes four to a byte along the grouped rows: a 7-token prompt (14 rows of 4) "
                    "raises RuntimeError in its bit packer", "kvscope quantizes the prompt (it keeps codes unpacked)",
                    "the reference refused with RuntimeError, the engine accepted", hqq_packing),
    "linear_conv_state": ("update_conv_state on decode returns cat(old 4, new 1): 5 columns",
                          "the seed returns the rolled state: 4 columns",
                          "conv states: shape [1, 3, 4], reference [1, 3, 5]", linear_conv_state),
}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cli, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name, (_, _, _, build) in CASES.items():
        fixture = build()
        fixture.update({"name": name, "dtype": "float32",
                        "reference": f"transformers {transformers.__version__} cache_utils (installed release)"})
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(fixture, f)
    report = subprocess.run([cli, "conform", out], capture_output=True, text=True).stdout
    failures = {line.split(".json: ", 1)[0]: line.split(".json: ", 1)[1]
                for line in report.splitlines() if ".json: " in line}
    wrong = 0
    for name, (release, seed, expected, _) in CASES.items():
        got = failures.get(name, "passed conformance")
        held = expected in got
        wrong += not held
        print(f"{'ok  ' if held else 'FAIL'} {name}: release: {release}; kvscope: {seed}. conform: {got}")
        if not held:
            print(f"     expected conform to report: {expected}")
    # The release's offloading needs CUDA streams: on a CPU-only torch its first update fails (kvscope models
    # the transfers on the CPU instead; `run --cache offloaded` is tested elsewhere).
    cache = cu.DynamicCache(config=PretrainedConfig(num_hidden_layers=2), offloading=True)
    try:
        cache.update(*states(torch.Generator().manual_seed(1), 2), 0)
        print("FAIL offloading_on_cpu: the release offloaded on a CPU-only torch")
        wrong += 1
    except (AssertionError, RuntimeError) as error:
        print(f"ok   offloading_on_cpu: the release refuses on a CPU-only torch ({type(error).__name__}: {error})")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
