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


def crop_case(layer, spec, lengths, argument, release=False):
    """The release's crop after updates, replayed as the seed's `crop` (kvscope's default) or, with `release`,
    as kvscope's cropTokens (op `crop_tokens`: the release's meaning, which must then pass conformance)."""
    generator = torch.Generator().manual_seed(5)
    ops = updates(layer, generator, lengths)
    op = {"op": "crop_tokens", "tokens_to_remove": argument} if release else {"op": "crop", "max_length": argument}
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


def crop_zero_release():
    return crop_case(cu.DynamicLayer(), {"type": "dynamic"}, [5], 0, release=True)


def over_crop_release():
    return crop_case(cu.DynamicLayer(), {"type": "dynamic"}, [3], -5, release=True)


def sliding_rollback_release():
    """Speculative decoding on a sliding layer: record the past, write 3 draft tokens past the window, reject 2."""
    layer = cu.DynamicSlidingWindowLayer(sliding_window=3)
    layer.activate_past_recording()
    generator = torch.Generator().manual_seed(5)
    ops = [{"op": "activate_past_recording"}] + updates(layer, generator, [4, 3])
    layer.crop(-2)
    return {"level": "layer", "layer": {"type": "dynamic_sliding", "sliding_window": 3},
            "ops": ops + [{"op": "crop_tokens", "tokens_to_remove": -2}, state(layer)]}


def dynamic_reset():
    layer = cu.DynamicLayer()
    ops = updates(layer, torch.Generator().manual_seed(5), [5])
    layer.reset()
    return {"level": "layer", "layer": {"type": "dynamic"},
            "ops": ops + [{"op": "reset"}, {"op": "state", "expect_seq_length": seq_length(layer)}]}


def hybrid_cache(config, recording):
    cache = cu.DynamicCache(config=PretrainedConfig(**config))
    generator = torch.Generator().manual_seed(5)
    ops = []
    if recording:
        cache.activate_past_recording()
        ops.append({"op": "activate_past_recording"})
    for length in (4, 2):
        k, v = states(generator, length)
        cache.update(k, v, 0)
        conv = torch.randn((1, 3, 3 if length == 4 else length), generator=generator)
        cache.update_conv_state(conv, 0)
        ops += [{"op": "update", "layer_idx": 0, "keys": tensor_json(k), "values": tensor_json(v)},
                {"op": "update_conv_state", "layer_idx": 0, "conv_states": tensor_json(conv)}]
    return cache, ops


def hybrid_crop():
    config = {"num_hidden_layers": 1, "layer_types": ["hybrid"]}
    cache, ops = hybrid_cache(config, recording=False)
    op = {"op": "crop", "max_length": 5}
    try:
        cache.crop(5)
    except RuntimeError as error:
        op["expect_error"] = type(error).__name__
    return {"level": "cache", "cache": {"type": "DynamicCache", "config": config}, "ops": ops + [op]}


def hybrid_rollback_release():
    config = {"num_hidden_layers": 1, "layer_types": ["hybrid"]}
    cache, ops = hybrid_cache(config, recording=True)
    cache.crop(-1)
    layer = cache.layers[0]
    return {"level": "cache", "cache": {"type": "DynamicCache", "config": config},
            "ops": ops + [{"op": "crop_tokens", "tokens_to_remove": -1},
                          {"op": "state", "layer_idx": 0, "expect_seq_length": seq_length(layer),
                           "expect_stored_keys": tensor_json(layer.keys),
                           "expect_stored_values": tensor_json(layer.values)},
                          {"op": "conv_window", "layer_idx": 0, "expect_conv_states": tensor_json(layer.conv_states[0])}]}


def static_hybrid_layer():
    config = {"num_hidden_layers": 1, "layer_types": ["hybrid"]}
    cache = cu.StaticCache(config=PretrainedConfig(**config), max_cache_len=6)
    conv = torch.randn((1, 3, 3), generator=torch.Generator().manual_seed(5))
    cache.update_conv_state(conv, 0)
    return {"level": "cache", "cache": {"type": "StaticCache", "config": config, "max_cache_len": 6},
            "ops": [{"op": "update_conv_state", "layer_idx": 0, "conv_states": tensor_json(conv)},
                    {"op": "cache_state", "expect_seq_length": int(cache.get_seq_length()),
                     "expect_is_sliding": cache.is_sliding, "expect_max_cache_shape": [int(cache.get_max_length(0))]}]}


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
    "dynamic_reset": ("DynamicLayer.reset() drops the states: length 0 (5.18; 5.17 zeroed them)",
                      "the seed zeroes them in place and the length stays 5",
                      "seq length: engine 5, reference 0", dynamic_reset),
    "hybrid_crop": ("crop of a hybrid (linear + full attention) layer raises RuntimeError unless "
                    "activate_past_recording() was called", "the seed's crop of it does nothing (its MRO's no-op)",
                    "the reference refused with RuntimeError, the engine accepted", hybrid_crop),
    # The release's meaning, asked for through kvscope's cropTokens (op crop_tokens): the same answers.
    "crop_zero_release": ("crop(0) is a no-op", "cropTokens(0) is a no-op", "passed conformance", crop_zero_release),
    "over_crop_release": ("crop(-5) of 3 tokens empties the layer", "cropTokens(-5) empties it",
                          "passed conformance", over_crop_release),
    "sliding_rollback_release": ("after activate_past_recording(), crop(-2) rolls a sliding layer back past its "
                                 "window", "activatePastRecording + cropTokens(-2): the same tokens",
                                 "passed conformance", sliding_rollback_release),
    "hybrid_rollback_release": ("a recording hybrid layer's crop(-1) rolls back its keys and its conv window",
                                "cropTokens(-1): the same", "passed conformance", hybrid_rollback_release),
    # kvscope follows the release: the seed builds a plain StaticLayer for `hybrid`, which has no conv state.
    "static_hybrid_layer": ("a StaticCache's `hybrid` layer is a LinearAttentionAndStaticFullAttentionLayer",
                            "the same (the seed's StaticLayer would refuse update_conv_state)",
                            "passed conformance", static_hybrid_layer),
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
