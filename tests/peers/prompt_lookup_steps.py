# SPDX-License-Identifier: GPL-3.0-or-later
"""Transformers' generate() with speculative decoding, observed: per verification the tokens drafted, the tokens
accepted and every layer's cached length after the crop of the rejected drafts. Prompt lookup
(`prompt_lookup_num_tokens`; the peers of test_prompt_lookup_real_transformers.py and gemma3_prompt_lookup.py) or an
assistant model (`assistant_model`; assisted_decoding.py)."""
import torch
from transformers import DynamicCache
from transformers.generation import candidate_generator


def generate_with_steps(model, ids, num_tokens, max_new_tokens, assistant=None, **generate_kwargs):
    """The generated tokens, and per step {"drafted", "accepted", "lengths"} (lengths: every layer's).

    With `assistant`, it drafts exactly `num_tokens` tokens a step (within the budget): its generation config gets
    num_assistant_tokens = num_tokens, the "constant" schedule and no confidence threshold, where Transformers'
    defaults (20, "heuristic", 0.4) would change the count from step to step."""
    steps, drafts = [], []
    generator = (candidate_generator.AssistedCandidateGenerator if assistant is not None
                 else candidate_generator.PromptLookupCandidateGenerator)
    original = generator.get_candidates

    def get_candidates(self, input_ids, **kwargs):
        candidates, logits = original(self, input_ids, **kwargs)
        drafts.append(candidates.shape[1] - input_ids.shape[1])
        return candidates, logits

    cache = DynamicCache(config=model.config)
    crop = cache.crop

    def recorded_crop(tokens_to_remove):
        crop(tokens_to_remove)
        drafted = drafts[-1]
        steps.append({"drafted": drafted, "accepted": drafted + int(tokens_to_remove),
                      "lengths": [int(cache.get_seq_length(layer)) for layer in range(len(cache.layers))]})

    cache.crop = recorded_crop
    if assistant is not None:
        assistant.generation_config.num_assistant_tokens = num_tokens
        assistant.generation_config.num_assistant_tokens_schedule = "constant"
        assistant.generation_config.assistant_confidence_threshold = 0.0
        generate_kwargs["assistant_model"] = assistant
    else:
        generate_kwargs["prompt_lookup_num_tokens"] = num_tokens
    generator.get_candidates = get_candidates
    try:
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), past_key_values=cache, max_new_tokens=max_new_tokens,
                                 do_sample=False, **generate_kwargs)
    finally:
        generator.get_candidates = original
    return out[0, len(ids):].tolist(), steps
