# SPDX-License-Identifier: GPL-3.0-or-later
"""The session header's description of the model and the cache (sessions/FORMAT.md, "Metadata")."""

import json

from . import events as ev


def config_dict(config) -> dict:
    if config is None:
        return {}
    if hasattr(config, "to_dict"):
        data = config.to_dict()
    else:
        data = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    return json.loads(json.dumps(data, default=str))


def cache_kind(cache, facts) -> str:
    if getattr(cache, "offloading", False):
        return "offloaded"
    kinds = {facts.kind(layer) for layer in getattr(cache, "layers", [])}
    if ev.QUANTIZED in kinds:
        return "quantized"
    if kinds and kinds <= {ev.STATIC, ev.STATIC_SLIDING_WINDOW}:
        return "static"
    return "dynamic"


def cache_settings(cache, facts) -> dict:
    settings = {"class": type(cache).__name__}
    if hasattr(cache, "offloading"):
        settings["offloading"] = bool(cache.offloading)
        if cache.offloading:
            settings["offload_only_non_sliding"] = bool(getattr(cache, "only_non_sliding", False))
    layers = []
    for layer in getattr(cache, "layers", []):
        entry = {"class": type(layer).__name__}
        for name in ("sliding_window", "max_cache_len", "nbits", "q_group_size", "residual_length", "axis_key",
                     "axis_value"):
            value = getattr(layer, name, None)
            if isinstance(value, (int, float, str, bool)):
                entry[name] = value
        layers.append(entry)
    settings["layers"] = layers
    return settings
