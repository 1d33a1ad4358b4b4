# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs a conformance fixture's operations (oracle/FORMAT.md) on the reference caches, one step per
`cache_state` op: the same steps `kvscope-cli conform --record` gives the engine's run of it
(engine/cli/src/ConformanceRecorder.cpp), so that both sessions can be compared step by step.
"""

import torch


def tensor(value):
    return torch.tensor(value["data"], dtype=torch.float32).reshape(value["shape"])


def make_cache(cu, spec):
    from transformers_ref.configuration_utils import PreTrainedConfig

    config = PreTrainedConfig(**spec["config"])
    if spec["type"] == "DynamicCache":
        return cu.DynamicCache(config=config)
    if spec["type"] == "StaticCache":
        return cu.StaticCache(config=config, max_cache_len=spec["max_cache_len"])
    raise ValueError("unknown cache type " + spec["type"])


def run_fixture(cu, fixture, rec):
    """Applies every op; a step ends after each `cache_state`, and after the last op."""
    cache = make_cache(cu, fixture["cache"])
    pending = False
    for op in fixture["ops"]:
        name = op["op"]
        try:
            if name == "mask_sizes":
                cache.get_mask_sizes(op["query_length"], op["layer_idx"])
            elif name == "update":
                cache.update(tensor(op["keys"]), tensor(op["values"]), op["layer_idx"])
            elif name == "update_conv_state":
                cache.update_conv_state(tensor(op["conv_states"]), op["layer_idx"])
            elif name == "update_recurrent_state":
                cache.update_recurrent_state(tensor(op["recurrent_states"]), op["layer_idx"])
            elif name == "crop":
                cache.crop(op["max_length"])
            elif name == "reorder":
                cache.reorder_cache(torch.tensor(op["beam_idx"], dtype=torch.long))
            elif name == "batch_repeat_interleave":
                cache.batch_repeat_interleave(op["repeats"])
            elif name == "batch_select_indices":
                cache.batch_select_indices(torch.tensor(op["indices"], dtype=torch.long))
            elif name == "reset":
                cache.reset()
            elif name == "get_seq_length":
                cache.get_seq_length(op["layer_idx"])
            elif name == "has_previous_state":
                cache.has_previous_state(op["layer_idx"])
        except Exception:
            if "expect_error" not in op:
                raise
        pending = True
        if name == "cache_state":
            rec.next_step()
            pending = False
    if pending:
        rec.next_step()
    return cache
