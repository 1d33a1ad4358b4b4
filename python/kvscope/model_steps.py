# SPDX-License-Identifier: GPL-3.0-or-later
"""One step per model forward: the token fed, the next-token log-probabilities, the token texts.

The model's `forward` is shadowed on the model object (not a module hook: torch before 2.0 gives
forward pre-hooks no keyword arguments, and Transformers' generate passes `input_ids` by keyword).
"""

import torch

from . import active
from . import events as ev


def forward_wrapper(rec, forward):
    def recorded_forward(*args, **kwargs):
        if active.current is not rec:
            return forward(*args, **kwargs)
        try:
            _begin_step(rec, args, kwargs)
        except Exception as error:  # never the model's business: the step is marked lost, the forward runs
            rec.lose("forward", error)
        output = forward(*args, **kwargs)
        try:
            _end_step(rec, output)
        except Exception as error:
            rec.lose("forward", error)
            if rec._step_open:
                rec._close_step(-1, "")
        return output
    return recorded_forward


def _begin_step(rec, args, kwargs):
    cross = getattr(kwargs.get("past_key_values"), "cross_attention_cache", None)
    if cross is not None:
        rec.not_recorded.add(id(cross))
    input_ids = kwargs.get("input_ids")
    if input_ids is None and args and isinstance(args[0], torch.Tensor):
        input_ids = args[0]
    if rec._step_open:
        rec._close_step(-1, "")
    if rec._forwards > 0:
        rec._step += 1
    rec._forwards += 1
    if rec._step == 0:
        token = -1
        text = rec._prompt if rec._prompt is not None else decode(rec.tokenizer, input_ids, row=True)
        if rec._prompt is None:
            rec._prompt = text
    else:
        token = int(input_ids[0, -1]) if isinstance(input_ids, torch.Tensor) and input_ids.numel() else -1
        text = decode(rec.tokenizer, [token]) if token >= 0 else ""
    rec._open_step(token, text)


def _end_step(rec, output):
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        logits = output[0]
    elif logits is None and isinstance(output, torch.Tensor):
        logits = output
    token, payload = -1, None
    if isinstance(logits, torch.Tensor) and logits.dim() >= 2:
        row = logits[0, -1] if logits.dim() == 3 else logits[0]
        payload, token = logits_event(row)
    rec._close_step(token, decode(rec.tokenizer, [token]) if token >= 0 else "", payload)


def logits_event(row):
    """(LOGITS fields, greedy token): the whole vocabulary up to 1024 entries, else the top 256."""
    with torch.no_grad():
        log_probs = torch.log_softmax(row.detach().float(), dim=-1).cpu()
    if log_probs.numel() <= ev.LOGITS_FULL_VOCABULARY_LIMIT:
        values = log_probs.tolist()
        return ([], values, True), int(log_probs.argmax())
    top, ids = torch.topk(log_probs, ev.LOGITS_TOP_COUNT)
    ids = ids.tolist()
    return (ids, top.tolist(), False), ids[0]


def decode(tokenizer, ids, row=False):
    if tokenizer is None or ids is None:
        return ""
    if row and isinstance(ids, torch.Tensor):
        ids = ids[0].tolist() if ids.dim() == 2 else ids.tolist()
    try:
        return tokenizer.decode(ids)
    except Exception:  # a tokenizer that cannot decode must not break the run
        return ""
