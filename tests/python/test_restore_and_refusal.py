# SPDX-License-Identifier: GPL-3.0-or-later
"""The recorder leaves cache_utils exactly as it found it, changes no result, and refuses a cache
API it does not know before touching anything."""

import types

import pytest
import torch

import kvscope
from kvscope.patching import all_subclasses


def class_dicts(cu):
    """Every method object of every cache and layer class, as the classes hold them now."""
    roots = [cu.Cache, cu.CacheLayerMixin] + ([cu.LinearAttentionCacheLayerMixin]
                                              if hasattr(cu, "LinearAttentionCacheLayerMixin") else [])
    found = {}
    for root in roots:
        for cls in all_subclasses(root):
            for name, value in vars(cls).items():
                found[(cls, name)] = value
    return found


def run_ops(cu):
    torch.manual_seed(0)
    cache = cu.DynamicCache()
    out = []
    for length in (5, 1, 1, 2):
        for layer in range(2):
            out.append(cache.get_mask_sizes(length, layer))
            keys, values = cache.update(torch.randn(2, 2, length, 4), torch.randn(2, 2, length, 4), layer)
            out.append((keys.clone(), values.clone()))
    cache.crop(6)
    cache.batch_repeat_interleave(2)
    cache.batch_select_indices(torch.tensor([0, 3]))
    cache.reorder_cache(torch.tensor([1, 0]))
    out.append((cache.layers[0].keys.clone(), cache.get_seq_length()))
    return out


def same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def test_patches_are_active_inside_and_restored_on_exit(cu, tmp_path):
    before = class_dicts(cu)
    with kvscope.record(tmp_path / "a.kvsess") as rec:
        assert cu.Cache.__dict__["update"] is not before[(cu.Cache, "update")]
        assert cu.DynamicLayer.__dict__["crop"].__kvscope_original__ is before[(cu.DynamicLayer, "crop")]
        run_ops(cu)
        rec.next_step()
    after = class_dicts(cu)
    assert after.keys() == before.keys()
    assert all(after[key] is before[key] for key in before)


def test_restored_after_an_exception_and_the_steps_before_it_kept(cu, tmp_path):
    before = class_dicts(cu)
    path = tmp_path / "crash.kvsess"
    with pytest.raises(ZeroDivisionError):
        with kvscope.record(path) as rec:
            run_ops(cu)
            rec.next_step()
            1 / 0
    after = class_dicts(cu)
    assert all(after[key] is before[key] for key in before) and after.keys() == before.keys()
    assert path.stat().st_size > 0
    assert not path.read_bytes().endswith(b"KVEND\0\0\0")  # unfinished, as after a crash


def test_recording_changes_no_result(cu, tmp_path):
    plain = run_ops(cu)
    with kvscope.record(tmp_path / "b.kvsess") as rec:
        recorded = run_ops(cu)
        rec.next_step()
    assert same(plain, recorded)
    assert rec.steps_written == 1


def test_refuses_an_unknown_cache_api_before_patching(cu, tmp_path):
    fake = types.SimpleNamespace(**{name: getattr(cu, name) for name in dir(cu) if not name.startswith("__")})
    del fake.QuantizedLayer

    class NoMaskSizes:  # a Cache without get_mask_sizes: another API
        def update(self):
            pass
    fake.Cache = NoMaskSizes
    before = class_dicts(cu)
    with pytest.raises(kvscope.UnsupportedCacheAPI) as refused:
        with kvscope.record(tmp_path / "c.kvsess", cache_utils=fake):
            pass
    message = str(refused.value)
    assert "QuantizedLayer" in message and "Cache.get_mask_sizes" in message
    assert "does not know" in message
    assert not (tmp_path / "c.kvsess").exists()
    assert all(class_dicts(cu)[key] is before[key] for key in before)


def test_refuses_a_nested_recording(cu, tmp_path):
    with kvscope.record(tmp_path / "d.kvsess"):
        with pytest.raises(RuntimeError, match="already active"):
            with kvscope.record(tmp_path / "e.kvsess"):
                pass


def test_arguments_by_keyword_and_cache_positions(cu, tmp_path):
    """Callers name the arguments or pass cache positions (some Transformers versions): recorded alike."""
    cache = cu.DynamicCache()
    with kvscope.record(tmp_path / "f.kvsess") as rec:
        cache.update(torch.ones(1, 1, 3, 4), torch.ones(1, 1, 3, 4), layer_idx=0)
        assert cache.get_mask_sizes(query_length=2, layer_idx=0) == (5, 0)
        rec.next_step()
        events = [event for event in rec._file._unfolded if len(event) == 4]
    masks = [event for event in events if event[0] == 1]
    assert masks == [(1, 0, 0, (2, 5, 0))]
    assert [event[3][:3] for event in events if event[0] == 0] == [(3, 3, 3)]
