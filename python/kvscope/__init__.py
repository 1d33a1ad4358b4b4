# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope: record a Hugging Face Transformers run's KV-cache operations as a kvscope session.

    import kvscope
    with kvscope.record("run.kvsess", model=model, tokenizer=tokenizer) as rec:
        model.generate(**inputs, max_new_tokens=64, past_key_values=cache)

A vLLM run's paged KV cache (block tables, free queue, prefix hits, preemptions) is recorded the same way:

    with kvscope.record_vllm(llm, "serve.kvsess"):
        llm.generate(prompts, sampling_params)

Open the file with `kvscope-cli info | replay | export` or the kvscope GUI.
"""

from .cache_api import UnsupportedCacheAPI
from .recorder import Recorder, __version__, record
from .vllm_recorder import VllmRecorder, record_vllm

__all__ = ["record", "Recorder", "record_vllm", "VllmRecorder", "UnsupportedCacheAPI", "__version__"]
