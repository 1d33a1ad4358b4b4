# SPDX-License-Identifier: GPL-3.0-or-later
"""Same file, same meaning: for every committed cache-level fixture, the Python recorder's session
of the reference running the fixture's operations and the engine's `conform --record` session give
the same `kvscope-cli replay --step K` JSON at every step (read in one `replay --all-steps`; all but the file name and the wall time,
which no two runs share)."""

import glob
import json
import os

import pytest

import kvscope
from conftest import FIXTURES, cli_available
from fixture_ops import run_fixture


def cache_fixtures():
    files = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.json"))):
        with open(path) as handle:
            if json.load(handle).get("level") == "cache":
                files.append(path)
    return files


FILES = cache_fixtures()


@pytest.fixture(scope="module")
def engine_sessions(tmp_path_factory):
    """The engine's session of every fixture, written once by `conform --record`."""
    if not cli_available():
        pytest.skip("kvscope-cli is not built: cmake --preset dev && cmake --build build/dev --target kvscope-cli")
    import subprocess
    from conftest import CLI

    out = tmp_path_factory.mktemp("engine")
    done = subprocess.run([CLI, "conform", FIXTURES, "--record", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "%d sessions recorded" % len(FILES) in done.stdout
    return out


def comparable(state):
    state.pop("file", None)
    state.pop("wall_ns", None)
    return state


def test_fixtures_are_committed():
    assert len(FILES) >= 72, "expected the committed cache fixtures under tests/data/conformance"



def all_states(cli, session):
    """Every step's state of a session, from one `replay --all-steps` (as `replay --step K` gives each)."""
    code, states, err = cli("replay", session, "--all-steps")
    assert code == 0, err
    return [comparable(state) for state in states]

@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p)[:-5] for p in FILES])
def test_python_recording_matches_the_engine_step_by_step(cu, cli, engine_sessions, tmp_path, path):
    with open(path) as handle:
        fixture = json.load(handle)
    name = os.path.basename(path)[:-5]
    python_session = tmp_path / (name + ".kvsess")
    with kvscope.record(python_session) as rec:
        run_fixture(cu, fixture, rec)
    engine_session = engine_sessions / (name + ".kvsess")
    _, python_info, _ = cli("info", python_session)
    _, engine_info, _ = cli("info", engine_session)
    assert python_info["complete"] and engine_info["complete"]
    assert python_info["steps"] == engine_info["steps"] > 0
    assert python_info["layer_types"] == engine_info["layer_types"]
    assert python_info["event_counts"] == engine_info["event_counts"]  # the same events, not only the same fold

    ours, engine = (all_states(cli, session) for session in (python_session, engine_session))
    assert len(ours) == len(engine) == python_info["steps"]
    for step, (mine, theirs) in enumerate(zip(ours, engine)):
        assert mine == theirs, "step %d of %s differs" % (step, name)


def _update(layer, length, batch=2, seed=0):
    import torch

    generator = torch.Generator().manual_seed(seed * 10 + layer)
    values = torch.randn(batch, 2, length, 4, generator=generator)
    as_json = {"shape": list(values.shape), "data": values.reshape(-1).tolist()}
    return [{"op": "mask_sizes", "layer_idx": layer, "query_length": length},
            {"op": "update", "layer_idx": layer, "keys": as_json, "values": as_json}]


def _operations_fixture(cache):
    """Crop, batch repeat/select, reorder and reset between updates (the committed fixtures have none);
    static layers have no crop or batch ops in the reference, so a static cache gets only the others."""
    state = {"op": "cache_state"}
    ops = _update(0, 2) + _update(1, 2) + [state]
    if cache["type"] == "DynamicCache":
        ops += [{"op": "crop", "max_length": 1}, state]
        ops += _update(0, 2, seed=1) + _update(1, 2, seed=1) + [state]
        ops += [{"op": "batch_repeat_interleave", "repeats": 2}, state]
        ops += _update(0, 1, batch=4, seed=2) + _update(1, 1, batch=4, seed=2) + [state]
        ops += [{"op": "batch_select_indices", "indices": [0, 3]}, state]
    ops += [{"op": "reorder", "beam_idx": [1, 0]}, state]
    ops += _update(0, 1, seed=3) + _update(1, 1, seed=3) + [state]
    ops += [{"op": "reset"}, state]
    ops += _update(0, 3, seed=4) + _update(1, 3, seed=4)
    return {"name": "operations", "level": "cache", "cache": cache, "dtype": "float32", "ops": ops}


@pytest.mark.parametrize("cache", [
    {"type": "DynamicCache", "config": {"num_hidden_layers": 2, "sliding_window": 6,
                                        "layer_types": ["full_attention", "sliding_attention"]}},
    {"type": "StaticCache", "config": {"num_hidden_layers": 2}, "max_cache_len": 8},
], ids=["dynamic_hybrid", "static"])
def test_cache_operations_match_the_engine_step_by_step(cu, cli, tmp_path, cache):
    steps = 10 if cache["type"] == "DynamicCache" else 5
    import subprocess
    from conftest import CLI

    fixture = _operations_fixture(cache)
    folder = tmp_path / "fixtures"
    folder.mkdir()
    (folder / "operations.json").write_text(json.dumps(fixture))
    # The ops carry no expectations, so `conform` reports them as failures; the recording is what counts.
    done = subprocess.run([CLI, "conform", str(folder), "--record", str(tmp_path / "engine")], capture_output=True,
                          text=True, timeout=300)
    assert "1 sessions recorded" in done.stdout, done.stdout + done.stderr
    engine_session = tmp_path / "engine" / "operations.kvsess"
    python_session = tmp_path / "python.kvsess"
    with kvscope.record(python_session) as rec:
        run_fixture(cu, fixture, rec)
    _, python_info, _ = cli("info", python_session)
    _, engine_info, _ = cli("info", engine_session)
    assert python_info["steps"] == engine_info["steps"] == steps
    for kind in ("crop", "batch_repeat", "batch_select", "reorder", "reset"):
        assert python_info["event_counts"].get(kind) == engine_info["event_counts"].get(kind), kind
    ours, engine = (all_states(cli, session) for session in (python_session, engine_session))
    assert len(ours) == len(engine) == steps
    for step, (mine, theirs) in enumerate(zip(ours, engine)):
        assert mine == theirs, "step %d differs" % step
