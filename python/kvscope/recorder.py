# SPDX-License-Identifier: GPL-3.0-or-later
"""`kvscope.record(...)`: observe a Transformers run's KV caches and write a kvscope session.

While a recorder is active, the methods of `transformers.cache_utils`' cache and layer classes (and
of every subclass that exists at that moment, e.g. a quantization backend's layer) are wrapped: the
wrapper calls the original with the same arguments, returns its result untouched, and reports what
changed as the C++ engine's CacheTracer would (kvscope.tracer). The model's `forward` is shadowed on
the model object so that each forward is one step. On exit everything is put back, also after an
exception; the file is finished (index and footer), or after an exception left as a crash leaves it,
its finished steps readable.

The recorder never breaks the program it watches: what it cannot record (arguments of a type it does
not expect, a cache or layer class it does not know, a write that fails) becomes a `lost` marker in the
session, one warning on stderr, and the call returns what the original returns (or raises what it
raises).
"""

import importlib
import os
import sys
import time

import torch

from . import active
from . import cache_api
from . import events as ev
from . import metadata
from .model_steps import forward_wrapper
from .patching import Patches, all_subclasses
from .session_file import SessionFile
from .tracer import CacheTracer
from .wrappers import CACHE_METHODS, CACHE_WRAPPERS, LAYER_METHODS, LAYER_WRAPPERS

__version__ = "0.1.0"


class _StandaloneLayers:
    """Layers used without a Cache: numbered in the order they are first seen."""

    def __init__(self):
        self.layers = []
        self.offloading = False

class Recorder:
    """Writes one session file; use it through `kvscope.record`."""

    def __init__(self, path, model=None, tokenizer=None, cache_utils=None, prompt=None, seed=0):
        self.path = os.fspath(path)
        self.model = model
        self.tokenizer = tokenizer
        self._cu_given = cache_utils
        self._prompt = prompt
        self._seed = int(seed)
        if self._seed < 0:
            raise ValueError("kvscope.record: seed must be a non-negative integer (the session format's seed is "
                             "unsigned), got %d" % self._seed)
        self._patches = Patches()
        self._file = None
        self._early = []          # events before the header can be written (the cache is not known yet)
        self._step = 0
        self._step_open = False
        self._step_start = 0
        self._forwards = 0
        self._tracers = {}        # id(cache) -> (cache, CacheTracer, on_host list)
        self._standalone = _StandaloneLayers()
        self._context = None
        self._inside = set()      # ids of objects whose operation is being recorded (super() calls pass through)
        # ids of caches left out of the session: an encoder-decoder model's cross-attention cache, whose states
        # are the encoder's output, not a cache that grows (the engine's sessions show self-attention only)
        self.not_recorded = set()
        self._clock0 = None
        self._device = None
        self.cu = None
        self.facts = None
        self.steps_written = 0
        self.lost = 0             # operations the session marks `lost` (not recorded)
        self._warned = False
        self._write_error = None  # the first failed write: nothing more is written after it

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        if active.current is not None:
            raise RuntimeError("kvscope.record: a recording is already active (%s); nest no recordings"
                               % active.current.path)
        cu = self._cu_given
        if cu is None:
            try:
                cu = importlib.import_module("transformers.cache_utils")
            except ImportError as error:
                raise cache_api.UnsupportedCacheAPI(
                    "kvscope.record: transformers.cache_utils cannot be imported (%s); install transformers" % error)
        cache_api.check(cu)
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
            # Said before anything is patched: a session that cannot be written is not worth a run.
            raise OSError("kvscope.record: cannot write %s: the folder %s does not exist or is not writable"
                          % (self.path, directory))
        self.cu = cu
        self.facts = cache_api.LayerFacts(cu)
        try:
            self._patch()
        except BaseException:
            self._patches.restore()
            raise
        active.current = self
        return self

    def __exit__(self, exc_type, exc, traceback):
        try:
            if exc_type is None and self._step_open:
                self._close_step(-1, "")
        except Exception as error:  # the recording's own failure must not replace the block's outcome
            self.lose("step_end", error)
        finally:
            active.current = None
            self._patches.restore()
            self._write_header_if_needed()
            try:
                if self._file is None:
                    pass
                elif exc_type is None and self._write_error is None:
                    self._file.finish()
                else:
                    # What a crash leaves: the finished steps, no footer; readers keep them and say so.
                    self._file.close_unfinished()
            except Exception as error:
                self._write_failed(error)
        return False

    def next_step(self) -> int:
        """Closes the step of raw cache calls made since the last one (no model); returns its number."""
        if not self._step_open:
            self._open_step(-1, "")
        step = self._step
        self._close_step(-1, "")
        self._step += 1
        return step

    # --- events ----------------------------------------------------------------------------

    def _emit(self, kind, layer, fields):
        event = (kind, self._step, layer, fields)
        if self._file is None:
            if self._write_error is None:
                self._early.append(event)
            return
        self._emit_event(event)

    def _emit_event(self, event):
        if self._write_error is not None:
            return
        try:
            self._file.emit(event)
        except Exception as error:
            self._write_failed(error)

    def lose(self, operation, error) -> None:
        """Marks an operation the recorder could not record: a `lost` event in the session (the
        operation and why), one warning on stderr for the whole recording. Never raises."""
        self.lost += 1
        reason = "%s: %s" % (type(error).__name__, error)
        try:
            self._emit(ev.LOST, -1, (str(operation), reason))
        except Exception:
            pass
        self._warn("could not record %s (%s); the session marks it `lost` (kvscope-cli info counts them) "
                   "and the program goes on" % (operation, reason))

    def _write_failed(self, error) -> None:
        """A write failed (disk full, file removed): stop writing, say so once, let the program go on."""
        if self._write_error is None:
            self._write_error = error
            self.lost += 1
            self._warn("writing %s failed (%s: %s); nothing more is recorded and the program goes on"
                       % (self.path, type(error).__name__, error))

    def _warn(self, message) -> None:
        # stderr rather than warnings.warn: `python -W error` would turn a warning into an exception.
        if self._warned:
            return
        self._warned = True
        try:
            sys.stderr.write("kvscope: %s (further problems of this recording are not reported here)\n" % message)
        except Exception:
            pass

    def _ensure_step(self):
        """Raw calls (no model) open their step lazily; with a model, forwards open steps."""
        if not self._step_open and self.model is None:
            self._open_step(-1, "")

    def _open_step(self, token_id, text):
        self._step_open = True
        self._step_start = time.perf_counter_ns()
        self._emit(ev.STEP_BEGIN, -1, (int(token_id), text))

    def _close_step(self, token_id, text, logits=None):
        try:
            for _, tracer, _ in self._tracers.values():
                tracer.emit_totals_if_changed()
        except Exception as error:
            self.lose("memory totals", error)
        if logits is not None:
            self._emit(ev.LOGITS, -1, logits)
        wall = time.perf_counter_ns() - self._step_start
        self._write_header_if_needed()
        self._emit(ev.STEP_END, -1, (int(token_id), text, wall))
        self._step_open = False
        self.steps_written += 1

    def _clock(self, ns):
        """The session clock: nanoseconds from the first timed operation."""
        if self._clock0 is None:
            self._clock0 = ns
        return ns - self._clock0

    def _write_header_if_needed(self):
        if self._file is not None or self._write_error is not None:
            return
        try:
            metadata = self._metadata()
        except Exception as error:  # a model or cache whose description fails: the events still count
            self.lose("metadata", error)
            metadata = self._metadata(describe=False)
        try:
            self._file = SessionFile(self.path, metadata)
        except Exception as error:
            self._write_failed(error)
            return
        early, self._early = self._early, []
        for event in early:
            self._emit_event(event)

    # --- metadata --------------------------------------------------------------------------

    def _metadata(self, describe=True) -> dict:
        """The header; without `describe`, only what needs nothing of the model and the cache."""
        cache = next(iter(self._tracers.values()))[0] if self._tracers and describe else None
        model_name, model_config = "", {}
        if self.model is not None and describe:
            config = getattr(self.model, "config", None)
            model_name = getattr(config, "_name_or_path", "") or type(self.model).__name__
            model_config = metadata.config_dict(config)
        transformers_version = cache_api._transformers_version()
        return {
            # Readers show only the keys they know: the versions go in the writer's name too.
            "kvscope_version": "kvscope-python %s (transformers %s, torch %s)" % (
                __version__, transformers_version, torch.__version__),
            "model": model_name,
            "model_config": model_config,
            "cache": metadata.cache_kind(cache, self.facts) if cache is not None else "",
            "cache_settings": metadata.cache_settings(cache, self.facts) if cache is not None else {},
            "device": self._device or "cpu",
            "seed": self._seed,
            "prompt": self._prompt or "",
            "created_unix_ns": time.time_ns(),
            "recorder": "python",
            "transformers_version": transformers_version,
            "torch_version": torch.__version__,
        }

    # --- patches ---------------------------------------------------------------------------

    def _patch(self):
        cu = self.cu
        encoder_decoder = getattr(cu, "EncoderDecoderCache", None)
        for cls in all_subclasses(cu.Cache):
            if encoder_decoder is not None and issubclass(cls, encoder_decoder):
                continue  # it delegates to its two inner caches, which record themselves
            for name in CACHE_METHODS:
                self._patches.wrap(cls, name, CACHE_WRAPPERS[name])
        roots = [cu.CacheLayerMixin]
        if getattr(cu, "LinearAttentionCacheLayerMixin", None) is not None:
            roots.append(cu.LinearAttentionCacheLayerMixin)
        done = set()
        for root in roots:
            for cls in all_subclasses(root):
                if cls in done:
                    continue
                done.add(cls)
                for name in LAYER_METHODS:
                    self._patches.wrap(cls, name, LAYER_WRAPPERS[name])
        if self.model is not None:
            self._patches.set_instance_attribute(self.model, "forward", forward_wrapper(self, self.model.forward))

    # --- tracers ---------------------------------------------------------------------------

    def _tracer_for(self, cache):
        entry = self._tracers.get(id(cache))
        if entry is None or entry[0] is not cache:
            on_host = []
            entry = (cache, CacheTracer(self._emit, self.facts, cache.layers, on_host), on_host)
            self._tracers[id(cache)] = entry
        return entry[1]

    def _standalone_index(self, layer):
        layers = self._standalone.layers
        for index, known in enumerate(layers):
            if known is layer:
                return index
        layers.append(layer)
        return len(layers) - 1

    def _layer_place(self, layer):
        """(tracer, index, owner) of a layer: its cache's, or the standalone registry's."""
        context = self._context
        if context is not None:
            for index, known in enumerate(context.cache.layers):
                if known is layer:
                    return context.tracer, index, context
        index = self._standalone_index(layer)
        return self._tracer_for(self._standalone), index, None

    def _note_device(self, tensor):
        if self._device is None and isinstance(tensor, torch.Tensor):
            self._device = tensor.device.type

    # --- updates ---------------------------------------------------------------------------


def record(path, model=None, tokenizer=None, cache_utils=None, prompt=None, seed=0) -> Recorder:
    """Records every KV-cache operation of the `with` block into the session file `path`.

    With `model`, each forward of the model is one step, with its next-token log-probabilities and,
    given `tokenizer`, the text of the tokens. Without it, `rec.next_step()` closes a step of raw
    cache calls. `cache_utils` defaults to the installed `transformers.cache_utils`.
    """
    return Recorder(path, model=model, tokenizer=tokenizer, cache_utils=cache_utils, prompt=prompt, seed=seed)
