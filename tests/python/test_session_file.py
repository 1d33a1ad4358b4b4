# SPDX-License-Identifier: GPL-3.0-or-later
"""A Python-written session is a kvscope session: the C++ reader (`kvscope-cli info`, `replay`)
reads it, a crash leaves its finished steps readable, and long sessions carry the snapshots that
`replay --step K` seeks through."""

import pytest
import torch

import kvscope
from kvscope import session_file


def raw_steps(cu, path, steps, layers=2, sliding_window=None):
    torch.manual_seed(1)
    if sliding_window is None:
        cache = cu.DynamicCache()
    else:
        from transformers_ref.configuration_utils import PreTrainedConfig

        cache = cu.DynamicCache(config=PreTrainedConfig(num_hidden_layers=layers, sliding_window=sliding_window))
    with kvscope.record(path) as rec:
        for step in range(steps):
            length = 4 if step == 0 else 1
            for layer in range(layers):
                cache.get_mask_sizes(length, layer)
                cache.update(torch.randn(1, 2, length, 8), torch.randn(1, 2, length, 8), layer)
            rec.next_step()
    return cache


def test_info_and_replay_read_a_recording(cu, cli, tmp_path):
    path = tmp_path / "raw.kvsess"
    raw_steps(cu, path, 5)
    code, info, err = cli("info", path)
    assert code == 0, err
    assert info["complete"] is True and info["steps"] == 5 and info["intact_steps"] == 5
    assert info["layers"] == 2 and info["layer_types"] == ["dynamic", "dynamic"]
    assert info["event_counts"]["update"] == 10 and info["event_counts"]["mask_sizes"] == 10
    assert info["metadata"]["cache"] == "dynamic"
    assert info["metadata"]["cache_settings"]["class"] == "DynamicCache"
    code, state, err = cli("replay", path, "--step", 2)
    assert code == 0, err
    layer = state["layers"][1]
    assert layer["seq_length"] == 6 and layer["stored_tokens"] == 6
    assert layer["bytes_device"] == 2 * 6 * 2 * 8 * 4  # keys and values, float32
    assert layer["kv_length"] == 6 and layer["query_length"] == 1
    assert state["memory"]["device_full_precision"] == 2 * layer["bytes_device"]


def test_a_crash_keeps_the_finished_steps(cu, cli, tmp_path):
    path = tmp_path / "crash.kvsess"
    cache = cu.DynamicCache()
    with pytest.raises(KeyboardInterrupt):
        with kvscope.record(path) as rec:
            for step in range(3):
                cache.update(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 2, 4), 0)
                rec.next_step()
            cache.update(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 2, 4), 0)
            raise KeyboardInterrupt
    code, info, err = cli("info", path)
    assert code == 2  # damaged: no footer
    assert info["intact_steps"] >= 3 and info["complete"] is False
    code, state, err = cli("replay", path, "--step", 2)
    assert code == 0, err
    assert state["layers"][0]["seq_length"] == 6


def test_long_sessions_carry_snapshots_replay_seeks_through(cu, cli, tmp_path):
    path = tmp_path / "long.kvsess"
    steps = session_file.SNAPSHOT_INTERVAL + 40
    raw_steps(cu, path, steps, layers=1, sliding_window=8)  # evicted tokens add up across the snapshot
    data = path.read_bytes()
    assert data.count(b"\x02\x00\x00\x00\x01\x00") >= 1  # a Snapshot chunk header (type 2, version 1)
    code, info, err = cli("info", path)
    assert code == 0 and info["steps"] == steps, err
    for step in (SNAP := session_file.SNAPSHOT_INTERVAL) - 1, SNAP, steps - 1:
        code, state, err = cli("replay", path, "--step", step)
        assert code == 0, err
        assert state["step"] == step and state["layers"][0]["seq_length"] == 4 + step
        assert state["layers"][0]["evicted_tokens"] == 4 + step - 7
    # `replay` without --step folds every event; with it, the snapshot and the steps after it: same state.
    code, folded, err = cli("replay", path)
    assert code == 0, err
    folded.pop("wall_ns"), state.pop("wall_ns")
    assert folded == state


KILLED_RUN = """
import os, signal, sys
sys.path[:0] = %r
import conftest, torch, kvscope
cache = conftest.REFERENCE.DynamicCache()
with kvscope.record(%r) as rec:
    for step in range(4):
        cache.update(torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4), 0)
        rec.next_step()
    cache.update(torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4), 0)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_finished_steps_survive_a_kill(cu, cli, tmp_path):
    import os
    import subprocess
    import sys

    import conftest

    path = tmp_path / "killed.kvsess"
    here = os.path.dirname(os.path.abspath(conftest.__file__))
    paths = [here, os.path.join(conftest.ROOT, "python"), conftest.ORACLE]
    done = subprocess.run([sys.executable, "-c", KILLED_RUN % (paths, str(path))], timeout=120)
    assert done.returncode == -9
    code, info, err = cli("info", path)
    assert code == 2 and info["intact_steps"] == 4 and not info["complete"]
    code, state, err = cli("replay", path, "--step", 3)
    assert code == 0 and state["layers"][0]["seq_length"] == 8


def test_layers_used_without_a_cache(cu, cli, tmp_path):
    path = tmp_path / "layers.kvsess"
    sliding, dynamic = cu.DynamicSlidingWindowLayer(sliding_window=3), cu.DynamicLayer()
    with kvscope.record(path) as rec:
        for length in (2, 1, 1):
            for layer in (dynamic, sliding):
                layer.update(torch.randn(1, 1, length, 4), torch.randn(1, 1, length, 4))
            rec.next_step()
        dynamic.crop(2)
        rec.next_step()
    code, info, err = cli("info", path)
    assert code == 0 and info["steps"] == 4
    assert info["layer_types"] == ["dynamic", "dynamic_sliding_window"]
    assert info["event_counts"]["window_slide"] == 2 and info["event_counts"]["crop"] == 1
    code, state, err = cli("replay", path, "--step", 3)
    assert state["layers"][0]["seq_length"] == 2 and state["layers"][1]["stored_tokens"] == 2
