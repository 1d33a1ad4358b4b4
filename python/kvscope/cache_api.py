# SPDX-License-Identifier: GPL-3.0-or-later
"""What the recorder knows about Transformers' `cache_utils`: the classes and attributes it relies
on, and the facts about a layer that trace events carry.

The C++ engine's CacheTracer derives its events from counters its layers keep; a Transformers
layer keeps the same facts under other names (`cumulative_length`, `keys.shape[-2]`,
`_quantized_keys` ...). This module is the one place that reads them, so that a Transformers whose
cache API differs is refused here, with the missing names, before anything is patched.
"""

import torch

from . import events as ev

# Classes and the methods/attributes the recorder patches or reads: a cache_utils without them has
# another API, whose results the recorder could silently misdescribe.
REQUIRED = {
    "Cache": ("update", "get_mask_sizes", "get_seq_length", "crop", "reorder_cache", "batch_repeat_interleave",
              "batch_select_indices", "reset", "prefetch", "offload", "is_sliding"),
    "CacheLayerMixin": ("offload", "prefetch", "reset", "reorder_cache"),
    "DynamicLayer": ("update", "get_seq_length", "get_mask_sizes", "get_max_cache_shape", "crop",
                     "batch_repeat_interleave", "batch_select_indices"),
    "DynamicSlidingWindowLayer": ("update",),
    "StaticLayer": ("update", "get_seq_length"),
    "StaticSlidingWindowLayer": ("update",),
    "QuantizedLayer": ("update", "_quantize", "_dequantize", "crop"),
    "DynamicCache": (),
}
OPTIONAL = ("LinearAttentionCacheLayerMixin", "LinearAttentionLayer", "LinearAttentionAndFullAttentionLayer",
            "QuantizedCache", "StaticCache")


class UnsupportedCacheAPI(RuntimeError):
    """The installed transformers.cache_utils is not the cache API this recorder knows."""


def check(module) -> None:
    """Raises UnsupportedCacheAPI naming every missing class or attribute."""
    missing = []
    for class_name, attributes in REQUIRED.items():
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            missing.append(class_name)
            continue
        missing.extend("%s.%s" % (class_name, name) for name in attributes if not hasattr(cls, name))
    if missing:
        version = getattr(module, "__version__", None) or _transformers_version()
        raise UnsupportedCacheAPI(
            "kvscope.record: the installed transformers.cache_utils (transformers %s) has a cache API this "
            "recorder does not know: missing %s. kvscope records the layered cache API of Transformers' "
            "cache_utils.py (Cache, DynamicLayer, StaticLayer, QuantizedLayer ...); install a Transformers "
            "with that API or a kvscope that knows yours." % (version, ", ".join(missing)))


def _transformers_version() -> str:
    try:
        import transformers
        return getattr(transformers, "__version__", "unknown")
    except ImportError:
        return "unknown"


class LayerFacts:
    """Reads one layer class's facts, resolved once per class (the hot path pays attribute reads)."""

    def __init__(self, cu):
        self.cu = cu
        self._linear = getattr(cu, "LinearAttentionCacheLayerMixin", None)
        self._hybrid = getattr(cu, "LinearAttentionAndFullAttentionLayer", None)
        self._attention = cu.CacheLayerMixin
        self._kinds = {}

    def kind(self, layer) -> int:
        """The reference's layer class as the trace names it (CacheTracer::kindOf)."""
        cls = type(layer)
        kind = self._kinds.get(cls)
        if kind is None:
            cu = self.cu
            if not issubclass(cls, self._attention) and (self._linear is None or not issubclass(cls, self._linear)):
                # Recording it as some known kind would put made-up numbers in the session.
                raise TypeError("a cache layer of class %s, which derives from no layer class of %s"
                                % (cls.__name__, getattr(cu, "__name__", "cache_utils")))
            if self._hybrid is not None and issubclass(cls, self._hybrid):
                kind = ev.LINEAR_ATTENTION_AND_FULL_ATTENTION
            elif issubclass(cls, cu.DynamicSlidingWindowLayer):
                kind = ev.DYNAMIC_SLIDING_WINDOW
            elif issubclass(cls, cu.StaticSlidingWindowLayer):
                kind = ev.STATIC_SLIDING_WINDOW
            elif issubclass(cls, cu.StaticLayer):
                kind = ev.STATIC
            elif issubclass(cls, cu.QuantizedLayer):
                kind = ev.QUANTIZED
            elif self._linear is not None and issubclass(cls, self._linear) and not issubclass(cls, self._attention):
                kind = ev.LINEAR_ATTENTION
            else:
                kind = ev.DYNAMIC
            self._kinds[cls] = kind
        return kind

    def is_attention(self, layer) -> bool:
        return isinstance(layer, self._attention)

    @staticmethod
    def capacity(layer, kind: int) -> int:
        """Tokens held between updates; -1 unbounded (CacheTracer::capacityOf)."""
        if kind == ev.DYNAMIC_SLIDING_WINDOW:
            return layer.sliding_window - 1
        if kind in (ev.STATIC, ev.STATIC_SLIDING_WINDOW):
            return int(layer.max_cache_len)
        return -1

    @staticmethod
    def window_size(layer, kind: int) -> int:
        """The window the layer applies: W (dynamic), min(W, max_cache_len) (static)."""
        if kind == ev.DYNAMIC_SLIDING_WINDOW:
            return layer.sliding_window
        if kind == ev.STATIC_SLIDING_WINDOW:
            return int(layer.max_cache_len)
        return 0

    @staticmethod
    def seq_length(layer, kind: int) -> int:
        if kind == ev.LINEAR_ATTENTION:
            return 0
        if not getattr(layer, "is_initialized", False) and kind != ev.QUANTIZED:
            return 0
        return int(layer.get_seq_length())

    @staticmethod
    def stored_tokens(layer, kind: int, seq_length: int) -> int:
        """Tokens physically held: the buffer's rows; a static layer's filled rows."""
        if kind in (ev.STATIC, ev.STATIC_SLIDING_WINDOW):
            return min(seq_length, int(layer.max_cache_len))
        if kind == ev.QUANTIZED:
            return int(layer.cumulative_length)
        if kind == ev.LINEAR_ATTENTION or not getattr(layer, "is_initialized", False):
            return 0
        keys = layer.keys
        return keys.shape[-2] if keys is not None and keys.dim() >= 2 else 0

    def quantized_split(self, layer) -> tuple:
        """(residual tokens, quantized tokens) of a QuantizedLayer."""
        keys = getattr(layer, "keys", None)
        residual = keys.shape[-2] if keys is not None and keys.dim() == 4 else 0
        return residual, int(layer.cumulative_length) - residual

    @staticmethod
    def _tensor_bytes(tensor) -> int:
        return tensor.numel() * tensor.element_size() if tensor is not None else 0

    def kv_bytes(self, layer) -> int:
        """Bytes of a layer's own K/V tensors (full precision)."""
        if not getattr(layer, "is_initialized", False):
            return 0
        size = self._tensor_bytes
        return size(getattr(layer, "keys", None)) + size(getattr(layer, "values", None))

    def linear_bytes(self, layer) -> int:
        size = self._tensor_bytes
        return size(getattr(layer, "conv_states", None)) + size(getattr(layer, "recurrent_states", None))

    def quantized_bytes(self, layer) -> int:
        """Bytes of the quantized store: every tensor inside the backend's quantized objects."""
        return _nested_bytes(getattr(layer, "_quantized_keys", None)) + \
            _nested_bytes(getattr(layer, "_quantized_values", None))

    def stored_bytes(self, layer, kind: int) -> int:
        """All bytes the layer holds (CacheLayer::storedBytes)."""
        if kind == ev.QUANTIZED:
            return self.quantized_bytes(layer) + self.kv_bytes(layer)
        if kind == ev.LINEAR_ATTENTION:
            return self.linear_bytes(layer)
        if kind == ev.LINEAR_ATTENTION_AND_FULL_ATTENTION:
            return self.kv_bytes(layer) + self.linear_bytes(layer)
        return self.kv_bytes(layer)

    def transfer_bytes(self, layer, kind: int) -> int:
        """Bytes an offload or prefetch moves: the hybrid layer moves only its linear states."""
        if kind == ev.LINEAR_ATTENTION_AND_FULL_ATTENTION:
            return self.linear_bytes(layer)
        return self.stored_bytes(layer, kind)

    @staticmethod
    def batch_size(layers) -> int:
        """Batch size of the first layer that knows one; 0 when none does (CacheTracer::batchSizeOf)."""
        for layer in layers:
            keys = getattr(layer, "keys", None)
            if getattr(layer, "_quantized_keys", None) is not None:
                shape = _quantized_shape(layer)
                if shape is not None:
                    return shape
                continue
            batch = getattr(layer, "max_batch_size", None)
            if isinstance(batch, int):
                return batch
            if isinstance(keys, torch.Tensor) and keys.dim() == 4:
                return keys.shape[0]
            conv = getattr(layer, "conv_states", None)
            if isinstance(conv, torch.Tensor) and conv.dim() > 0:
                return conv.shape[0]
        return 0


def _quantized_shape(layer):
    keys = getattr(layer, "keys", None)
    if isinstance(keys, torch.Tensor) and keys.dim() == 4:
        return keys.shape[0]
    for item in _walk(layer._quantized_keys):
        if isinstance(item, tuple) and len(item) == 4 and all(isinstance(x, int) for x in item):
            return item[0]
    return None


def _walk(value, depth=0):
    yield value
    if depth > 3:
        return
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _walk(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item, depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, (torch.Tensor, type)):
        for item in vars(value).values():
            yield from _walk(item, depth + 1)


def _nested_bytes(value) -> int:
    return sum(item.numel() * item.element_size() for item in _walk(value) if isinstance(item, torch.Tensor))


def indices_of(indices) -> list:
    """The values of a 1-D index tensor; a boolean mask gives the selected positions."""
    if indices is None:
        return []
    tensor = torch.as_tensor(indices).detach().to("cpu")
    if tensor.dtype == torch.bool:
        return tensor.reshape(-1).nonzero().reshape(-1).tolist()
    return tensor.to(torch.long).reshape(-1).tolist()
