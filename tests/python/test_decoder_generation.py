# SPDX-License-Identifier: GPL-3.0-or-later
"""Recording generation of a small torch decoder that calls the cache as Transformers' models do,
through a DynamicCache, a sliding-window config, a quantized cache and an offloading cache; each
session is opened with `kvscope-cli info` (and `replay`), and recording changes no token."""

import contextlib
import json
import struct
import sys
import types

import torch

import kvscope
from conftest import ORACLE
from tiny_decoder import ByteTokenizer, Config, TinyDecoder

NEW_TOKENS = 6


def read_header(path):
    """The header's metadata JSON (sessions/FORMAT.md: magic, versions, lengths, then the JSON)."""
    data = path.read_bytes()
    assert data[:8] == b"KVSESS\0\0"
    (length,) = struct.unpack_from("<I", data, 28)
    return json.loads(data[32:32 + length])


def generate(model, cache_factory, path=None, tokenizer=None):
    prompt = torch.tensor([[3, 14, 15, 92, 65]])
    if path is None:
        return model.generate(prompt, cache_factory(), NEW_TOKENS)
    with kvscope.record(path, model=model, tokenizer=tokenizer):
        return model.generate(prompt, cache_factory(), NEW_TOKENS)


def record_and_open(cli, tmp_path, model, cache_factory, name):
    plain = generate(model, cache_factory)
    path = tmp_path / (name + ".kvsess")
    recorded = generate(model, cache_factory, path, ByteTokenizer())
    assert torch.equal(plain, recorded), "recording changed the generated tokens"
    code, info, err = cli("info", path)
    assert code == 0, err
    assert info["complete"] and info["steps"] == NEW_TOKENS
    assert info["event_counts"]["logits"] == NEW_TOKENS
    assert info["event_counts"]["update"] == NEW_TOKENS * model.config.num_hidden_layers
    assert info["metadata"]["model"] == "tiny-decoder"
    assert info["metadata"]["model_config"]["hidden_size"] == model.config.hidden_size
    assert "torch " + torch.__version__ in info["metadata"]["kvscope_version"]
    header = read_header(path)
    assert header["torch_version"] == torch.__version__ and header["recorder"] == "python"
    assert "transformers_version" in header
    return path, info, recorded


def test_dynamic_cache(cu, cli, tmp_path):
    model = TinyDecoder(Config())
    path, info, tokens = record_and_open(cli, tmp_path, model, cu.DynamicCache, "dynamic")
    assert info["layer_types"] == ["dynamic", "dynamic"] and info["metadata"]["cache"] == "dynamic"
    code, state, err = cli("replay", path, "--step", 0)
    tokenizer = ByteTokenizer()
    assert state["input"] == tokenizer.decode([3, 14, 15, 92, 65]) and state["input_token_id"] == -1
    assert state["token_id"] == int(tokens[0, 5]) and state["token"] == tokenizer.decode([int(tokens[0, 5])])
    code, state, err = cli("replay", path, "--step", 3)
    assert state["input_token_id"] == int(tokens[0, 7])  # step 3 is fed the third generated token
    assert state["layers"][0]["seq_length"] == 5 + 3


def test_sliding_window_config(cu, cli, tmp_path):
    config = Config(sliding_window=4, num_hidden_layers=3)
    model = TinyDecoder(config)
    path, info, _ = record_and_open(cli, tmp_path, model, lambda: cu.DynamicCache(config=config), "sliding")
    assert info["layer_types"] == ["dynamic_sliding_window"] * 3
    assert info["event_counts"]["window_slide"] >= NEW_TOKENS * 3 - 3
    code, state, err = cli("replay", path, "--step", NEW_TOKENS - 1)
    layer = state["layers"][0]
    assert layer["stored_tokens"] == 3 and layer["window_size"] == 4
    assert layer["window_end"] == 5 + NEW_TOKENS - 1 and layer["evicted_tokens"] == layer["seq_length"] - 3


def test_quantized_cache(cu, cli, tmp_path):
    """The reference's QuantizedCache needs quanto or HQQ (not in Debian); the oracle's pure-torch
    min-max QuantizedLayer is the same API, so a Cache of those layers is the quantized cache here."""
    sys.path.insert(0, ORACLE)
    from reference_quantizer import MinMaxQuantizedLayer

    model = TinyDecoder(Config())

    def cache():
        return cu.Cache(layers=[MinMaxQuantizedLayer(nbits=4, q_group_size=16, residual_length=3) for _ in range(2)])
    path, info, _ = record_and_open(cli, tmp_path, model, cache, "quantized")
    assert info["layer_types"] == ["quantized", "quantized"] and info["metadata"]["cache"] == "quantized"
    assert info["event_counts"]["quantize_flush"] >= 4  # the prefill and one flush per 3 tokens, per layer
    code, state, err = cli("replay", path, "--step", NEW_TOKENS - 1)
    layer = state["layers"][0]
    assert layer["seq_length"] == 5 + NEW_TOKENS - 1
    assert layer["bytes_device_quantized"] > 0
    assert state["memory"]["device_quantized"] > 0


@contextlib.contextmanager
def cpu_streams():
    """The reference's offloading uses CUDA streams; on a CPU-only torch these stand-ins do nothing,
    so its offload/prefetch calls (the data moves) run on the CPU."""
    stream = types.SimpleNamespace(wait_stream=lambda other: None)
    saved = {name: getattr(torch.cuda, name) for name in ("Stream", "default_stream", "stream")}
    torch.cuda.Stream = lambda *a, **k: stream
    torch.cuda.default_stream = lambda *a, **k: stream
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(torch.cuda, name, value)


def test_offloading_cache(cu, cli, tmp_path):
    if torch.cuda.is_available():
        streams = contextlib.nullcontext()
    else:
        streams = cpu_streams()
    model = TinyDecoder(Config(num_hidden_layers=3))
    with streams:
        path, info, _ = record_and_open(cli, tmp_path, model, lambda: cu.DynamicCache(offloading=True), "offloaded")
    assert info["metadata"]["cache"] == "offloaded"
    counts = info["event_counts"]
    assert counts["transfer"] >= NEW_TOKENS * 3  # every layer offloaded after its update, prefetched before
    assert counts["compute"] == NEW_TOKENS * 3
    code, state, err = cli("replay", path, "--step", NEW_TOKENS - 1)
    residency = [layer["residency"] for layer in state["layers"]]
    assert residency.count("host") >= 2
    assert state["memory"]["host"] > 0
    trace = tmp_path / "offloaded.json"
    code, exported, err = cli("export", path, "--perfetto", trace)
    assert code == 0, err
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(event.get("cat") == "compute" for event in events)
    assert any(event.get("cat") == "offload" for event in events)


def test_big_vocabulary_stores_the_top_256(cu, tmp_path):
    from kvscope import model_steps

    row = torch.randn(5000)
    (ids, values, complete), token = model_steps.logits_event(row)
    assert not complete and len(ids) == 256 and len(values) == 256
    assert token == int(row.argmax()) and ids[0] == token
    assert values == sorted(values, reverse=True)
    expected = torch.log_softmax(row, -1)[torch.tensor(ids)]
    assert torch.allclose(torch.tensor(values), expected)
    (ids, values, complete), _ = model_steps.logits_event(torch.randn(100))
    assert complete and ids == [] and len(values) == 100
