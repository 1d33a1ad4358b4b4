# SPDX-License-Identifier: GPL-3.0-or-later
"""Transformers' generate() with prompt lookup, observed: per verification the tokens drafted, the tokens
accepted and every layer's cached length after the crop of the rejected drafts (the peers of
test_prompt_lookup_real_transformers.py and gemma3_prompt_lookup.py)."""
import torch
from transformers import DynamicCache
from transformers.generation import candidate_generator


def generate_with_steps(model, ids, num_tokens, max_new_tokens, **generate_kwargs):
    """The generated tokens, and per step {"drafted", "accepted", "lengths"} (lengths: every layer's)."""
    steps, drafts = [], []
    original = candidate_generator.PromptLookupCandidateGenerator.get_candidates

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
    candidate_generator.PromptLookupCandidateGenerator.get_candidates = get_candidates
    try:
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), past_key_values=cache, max_new_tokens=max_new_tokens,
                                 do_sample=False, prompt_lookup_num_tokens=num_tokens, **generate_kwargs)
    finally:
        candidate_generator.PromptLookupCandidateGenerator.get_candidates = original
    return out[0, len(ids):].tolist(), steps
