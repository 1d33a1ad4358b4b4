# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope: record a Hugging Face Transformers run's KV-cache operations as a kvscope session.

    import kvscope
    with kvscope.record("run.kvsess", model=model, tokenizer=tokenizer) as rec:
        model.generate(**inputs, max_new_tokens=64, past_key_values=cache)

Open the file with `kvscope-cli info | replay | export` or the kvscope GUI.
"""

from .cache_api import UnsupportedCacheAPI
from .recorder import Recorder, __version__, record

__all__ = ["record", "Recorder", "UnsupportedCacheAPI", "__version__"]
