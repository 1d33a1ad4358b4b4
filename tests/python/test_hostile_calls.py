# SPDX-License-Identifier: GPL-3.0-or-later
"""The recorder never breaks the program it watches. Each hostile call below is made twice on fresh,
identically seeded objects: once without a recorder (the reference's own outcome: its result, or the
exception it raises) and once while recording. The outcome must be the same; what the recorder could
not record is a `lost` marker in the session (counted in `rec.lost` and by `kvscope-cli info`), and it
says so on stderr once per recording."""

import os

import pytest
import torch

import kvscope


def filled_cache(cu, layers=2, length=3):
    torch.manual_seed(7)
    cache = cu.DynamicCache()
    for layer in range(layers):
        cache.update(torch.randn(1, 2, length, 4), torch.randn(1, 2, length, 4), layer)
    return cache


class UnknownLayer:
    """A layer of a class the recorder has never seen (not a CacheLayerMixin)."""

    def __init__(self):
        self.keys = "not a tensor"

    def update(self, key_states, value_states, *args, **kwargs):
        return key_states, value_states

    def get_seq_length(self):
        return 0


def unknown_cache(cu):
    """A Cache whose layers are of a class the recorder does not know."""
    return cu.Cache(layers=[UnknownLayer(), UnknownLayer()])


class ExplodingLayers(list):
    """A layer list whose length cannot be taken: every probe of the recorder fails on it."""

    def __len__(self):
        raise RuntimeError("no length today")


def exploding_cache(cu):
    cache = filled_cache(cu)
    cache.layers = ExplodingLayers(cache.layers)
    return cache


# (name, call(cu) -> result, operations the session marks lost). A call that raises in the reference
# raises the same exception while recording and changed nothing, so nothing is lost, unless the
# recorder's own probe failed before the call (a string layer index).
HOSTILE_CALLS = [
    # Older Transformers pass the query's cache positions: the reference returns a tensor kv_length.
    ("mask sizes of a positions tensor", lambda cu: filled_cache(cu).get_mask_sizes(torch.arange(3, 6), 0), 1),
    ("mask sizes of a positions tensor by keyword",
     lambda cu: filled_cache(cu).get_mask_sizes(query_length=torch.arange(3, 5), layer_idx=1), 1),
    ("mask sizes of a layer past the cache", lambda cu: filled_cache(cu).get_mask_sizes(torch.arange(2), 9), 1),
    ("mask sizes of a float", lambda cu: filled_cache(cu).get_mask_sizes(2.5, 0), 1),
    ("mask sizes of a string (raises)", lambda cu: filled_cache(cu).get_mask_sizes("2", 0), 0),
    ("mask sizes of a tensor layer index", lambda cu: filled_cache(cu).get_mask_sizes(2, torch.tensor(1)), 0),
    ("mask sizes of an unknown layer class (raises)", lambda cu: unknown_cache(cu).get_mask_sizes(1, 0), 0),
    ("update of an unknown layer class", lambda cu: unknown_cache(cu).update(torch.ones(1, 1, 1, 2),
                                                                            torch.ones(1, 1, 1, 2), 1), 1),
    ("update of a string layer index (raises)",
     lambda cu: filled_cache(cu).update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4), "0"), 1),
    ("update of a layer past the cache (the cache grows)",
     lambda cu: filled_cache(cu).update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4), 5), 0),
    ("update of non-tensors (raises)", lambda cu: filled_cache(cu).update(None, None, 0), 0),
    ("update of a cache whose layers cannot be counted (raises)",
     lambda cu: exploding_cache(cu).update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4), 0), 1),
    ("crop of a cache whose layers cannot be counted (raises)", lambda cu: exploding_cache(cu).crop(1), 0),
    ("crop to a string (raises)", lambda cu: filled_cache(cu).crop("2"), 0),
    ("batch repeat of a tensor count", lambda cu: filled_cache(cu).batch_repeat_interleave(torch.tensor(2)), 0),
    ("batch repeat of a float (raises)", lambda cu: filled_cache(cu).batch_repeat_interleave(2.0), 0),
    ("batch select of a list", lambda cu: filled_cache(cu).batch_select_indices([0]), 0),
    ("reorder of a list (raises)", lambda cu: filled_cache(cu).reorder_cache([0]), 0),
    ("layer update of non-tensors (raises)", lambda cu: cu.DynamicLayer().update(None, None), 0),
]


def outcome(call, cu):
    """('result', value) or ('raised', exception type, message)."""
    try:
        return ("result", call(cu))
    except Exception as error:  # the reference's own exception, to compare
        return ("raised", type(error), str(error))


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name, call, lost", HOSTILE_CALLS, ids=[case[0] for case in HOSTILE_CALLS])
def test_a_hostile_call_returns_what_the_reference_returns(cu, tmp_path, capfd, name, call, lost):
    expected = outcome(call, cu)
    with kvscope.record(tmp_path / "hostile.kvsess", cache_utils=cu) as rec:
        got = outcome(call, cu)
        rec.next_step()
    assert same(expected, got), "%s: %r while recording, %r without" % (name, got, expected)
    assert rec.lost == lost
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("kvscope:")]
    assert len(warnings) == (1 if lost else 0), warnings


def test_losses_are_marked_in_the_session_and_warned_once(cu, cli, tmp_path, capfd):
    path = tmp_path / "lost.kvsess"
    cache = filled_cache(cu)
    with kvscope.record(path, cache_utils=cu) as rec:
        for step in range(3):
            kv_length, _offset = cache.get_mask_sizes(torch.arange(3, 5), 0)  # lost: kv_length is a tensor
            assert torch.equal(kv_length, torch.tensor([6, 7]) + 2 * step)  # 3 cached, 2 more each step
            cache.update(torch.randn(1, 2, 2, 4), torch.randn(1, 2, 2, 4), 0)  # recorded
            rec.next_step()
    assert rec.lost == 3
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("kvscope:")]
    assert len(warnings) == 1 and "get_mask_sizes" in warnings[0] and "TypeError" in warnings[0]
    code, info, err = cli("info", path)
    assert code == 0, err
    assert info["complete"] is True and info["steps"] == 3
    assert info["lost"] == {"count": 3, "operations": {"get_mask_sizes": 3}}
    assert info["event_counts"]["update"] == 3 and "mask_sizes" not in info["event_counts"]
    code, state, err = cli("replay", path)
    assert code == 0 and state["layers"][0]["seq_length"] == 9, err


def test_a_failing_write_leaves_the_program_running(cu, tmp_path, capfd):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full to fail writes on")
    cache = filled_cache(cu)
    with kvscope.record("/dev/full", cache_utils=cu) as rec:  # every write fails with ENOSPC
        for _ in range(2):
            keys, _values = cache.update(torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4), 1)
            rec.next_step()
    assert keys.shape == (1, 2, 5, 4)
    assert rec.lost == 1  # the write; nothing is recorded after it
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("kvscope:")]
    assert len(warnings) == 1 and "/dev/full" in warnings[0] and "OSError" in warnings[0]


class BrokenConfig:
    def to_dict(self):
        raise RuntimeError("this config cannot be described")


class TinyModel(torch.nn.Module):
    """A model whose forward returns logits and whose config cannot be described."""

    def __init__(self):
        super().__init__()
        self.config = BrokenConfig()

    def forward(self, input_ids=None, weird=None):
        return torch.zeros(1, input_ids.shape[-1], 8)


def test_a_model_the_recorder_cannot_describe_still_runs(cu, cli, tmp_path, capfd):
    path = tmp_path / "model.kvsess"
    model = TinyModel()
    with kvscope.record(path, model=model, cache_utils=cu) as rec:
        for length in (3, 1):
            out = model(input_ids=torch.ones(1, length, dtype=torch.long))
            assert out.shape == (1, length, 8)
    assert rec.lost == 1  # the header's model description; both steps are recorded
    assert len([line for line in capfd.readouterr().err.splitlines() if line.startswith("kvscope:")]) == 1
    code, info, err = cli("info", path)
    assert code == 0 and info["steps"] == 2 and info["lost"]["operations"] == {"metadata": 1}, err


def test_an_unwritable_folder_is_refused_before_anything_is_patched(cu, tmp_path):
    before = cu.Cache.__dict__["update"]
    with pytest.raises(OSError, match="does not exist or is not writable"):
        with kvscope.record(tmp_path / "missing" / "x.kvsess", cache_utils=cu):
            pass
    assert cu.Cache.__dict__["update"] is before
